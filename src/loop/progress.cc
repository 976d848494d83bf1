#include "loop/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "context/compaction_log.h"

namespace marathon {

namespace {

std::string short_hash(const std::string& h) { return h.substr(0, 12); }

std::string score_text(const State& s) {
  if (!s.best_score) return "best: none yet";
  return fmt::format("best {} {:.4g} ({})", s.goal.metric, *s.best_score,
                     short_hash(s.best_candidate));
}

std::string one_line(std::string text, size_t max) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > max) text = text.substr(0, max) + "...";
  return text;
}

}  // namespace

std::string progress_line(const Event& e, const State& s, bool with_tool_calls) {
  const json& p = e.payload;
  std::string line;
  if (e.type == ev::kToolFinished) {
    if (!with_tool_calls) return "";
    std::string tag = p.value("interrupted", false) ? "interrupted"
                      : p.value("ok", false)        ? "ok"
                                                    : "error";
    line = fmt::format("[{:>4}/{}] {:<10} {:<11} {}", s.used.tool_calls, s.limits.max_tool_calls,
                       p.value("name", ""), tag, one_line(p.value("output", ""), 80));
  } else if (e.type == ev::kEvalFinished) {
    const json r = p.value("result", json::object());
    std::string verdict = r.value("correct", false) ? "correct" : "NOT correct";
    std::string score = r.contains("score") && r["score"].is_number()
                            ? fmt::format("{:.4g}", r["score"].get<double>())
                            : "-";
    line = fmt::format("           eval #{} {} {}, {} {} [{}{}] | {}", s.evaluations,
                       short_hash(p.value("candidate", "")), verdict, s.goal.metric, score,
                       p.value("status", "ok"), p.value("cached", false) ? ", cached" : "",
                       score_text(s));
  } else if (e.type == ev::kBudgetWarned) {
    line = fmt::format("           budget: {} at {:.6g} of {:.6g}", p.value("which", ""),
                       p.value("used", 0.0), p.value("limit", 0.0));
  } else if (e.type == ev::kGoalChanged) {
    line = fmt::format("           goal {}: {} {}", p.value("verb", ""), p.value("status", ""),
                       one_line(p.value("progress", ""), 80));
  } else if (e.type == ev::kModelResponse && p.contains("error")) {
    line = fmt::format("           model error: {}", one_line(p["error"].dump(), 100));
  } else if (e.type == ev::kCompactionInstalled) {
    line = fmt::format("           compaction: {} ({} -> {} tokens)", p.value("outcome", ""),
                       p.value("tokens_before", 0), p.value("tokens_after", 0));
  } else if (e.type == context::kCompactionCut) {
    line = fmt::format(
        "           compaction: cut {} message(s) too large for the window "
        "({} -> {} tokens)",
        p.contains("cuts") && p["cuts"].is_array() ? p["cuts"].size() : 0,
        p.value("tokens_before", 0), p.value("tokens_after", 0));
  } else if (e.type == ev::kLlmUsageRejected) {
    line = fmt::format("           usage not believed, estimated instead: {}",
                       one_line(p.value("problems", json::array()).dump(), 100));
  } else if (e.type == ev::kExecutorJobLost) {
    line = fmt::format("           executor: {}{}", one_line(p.value("reason", ""), 100),
                       p.value("retry", json()).is_string() ? "; retried once" : "; given up");
  } else if (e.type == ev::kExecutorSlotQuarantined) {
    line = fmt::format("           executor: slot {} quarantined ({} faulted or hung evaluations)",
                       p.value("slot", ""), p.value("faults_in_a_row", 0));
  } else if (e.type == ev::kRunPaused || e.type == ev::kRunFinished) {
    line = fmt::format("           {}: {} {}", e.type, p.value("reason", ""),
                       one_line(p.value("message", p.value("summary", "")), 100));
  }
  return line;
}

void TerminalProgress::on_event(const Event& e, const State& s) {
  std::string line = progress_line(e, s);
  if (!line.empty()) {
    std::fputs((line + "\n").c_str(), out_);
    std::fflush(out_);
  }
}

std::string action_after(const Event& e) {
  if (e.type == ev::kModelRequest) return "waiting for the model";
  if (e.type == ev::kToolStarted)
    return "running " + e.payload.value("name", std::string("a tool"));
  if (e.type == ev::kToolFinished || e.type == ev::kModelResponse) return "thinking";
  if (e.type == ev::kRunPaused) return "paused";
  if (e.type == ev::kRunFinished) return "finished";
  return "";
}

namespace {

std::string clock_text(double s) {
  auto t = static_cast<int64_t>(s < 0 ? 0 : s);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

}  // namespace

StatusFigures status_figures(const State& s) {
  return {s.used.tool_calls, s.limits.max_tool_calls, s.best_score,      s.goal.metric,
          s.used.cost_usd,   s.used.wall_s,           s.paused || s.done};
}

std::string status_text(const StatusFigures& f, double elapsed_s, const std::string& action) {
  std::string calls = f.max_tool_calls > 0 ? fmt::format("{}/{}", f.tool_calls, f.max_tool_calls)
                                           : fmt::format("{}", f.tool_calls);
  std::string best =
      f.best ? fmt::format("best {} {:.4g}", f.metric, *f.best) : std::string("best: none yet");
  return fmt::format("[tool calls {}] {} | {} | ${:.2f} | {}", calls, best, clock_text(elapsed_s),
                     f.cost_usd, action);
}

StatusLineProgress::StatusLineProgress(std::FILE* out)
    : out_(out), at_last_event_(std::chrono::steady_clock::now()) {
  ticker_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::seconds(1));
      if (!stop_) draw_locked();
    }
  });
}

StatusLineProgress::~StatusLineProgress() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    std::fputs("\r\033[K", out_);  // the summary follows on a clean line
    std::fflush(out_);
  }
  cv_.notify_all();
  ticker_.join();
}

void StatusLineProgress::draw_locked() {
  if (!have_state_) return;
  double since =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - at_last_event_).count();
  std::string text =
      status_text(figures_, figures_.wall_s + (figures_.stopped ? 0 : since), action_);
  // One screen line: a wrapped line could not be redrawn in place.
  winsize ws{};
  size_t width = ::ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 99;
  if (text.size() > width) text.resize(width);
  std::fputs(("\r\033[K" + text).c_str(), out_);
  std::fflush(out_);
}

void StatusLineProgress::on_event(const Event& e, const State& s) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string line = progress_line(e, s, /*with_tool_calls=*/false);
  if (!line.empty()) std::fputs(("\r\033[K" + line + "\n").c_str(), out_);
  figures_ = status_figures(s);
  have_state_ = true;
  at_last_event_ = std::chrono::steady_clock::now();
  if (std::string a = action_after(e); !a.empty()) action_ = a;
  draw_locked();
}

std::string run_summary(const State& s, const RunReport& report, const std::string& run_dir) {
  const char* outcome = report.outcome == RunOutcome::kFinished ? "finished"
                        : report.outcome == RunOutcome::kPaused ? "paused"
                                                                : "stopped on an error";
  const BudgetUsed& u = s.used;
  std::string out = fmt::format("\n== run {} ({}) ==\n", outcome, report.reason);
  out += fmt::format("  {}\n", score_text(s));
  if (s.baseline_score) out += fmt::format("  baseline score {:.4g}\n", *s.baseline_score);
  out += fmt::format("  evaluations {} ({} executed, {} served from cache)\n", s.evaluations,
                     s.evaluations_executed, s.evaluations - s.evaluations_executed);
  out += fmt::format("  tool calls {}, model calls {}, tokens {} (${:.4f}), wall {:.1f} s\n",
                     u.tool_calls, u.model_calls, u.prompt_tokens + u.completion_tokens, u.cost_usd,
                     u.wall_s);
  out += fmt::format("  log {}/events.db\n", run_dir);
  if (report.outcome != RunOutcome::kFinished) {
    out += fmt::format("  carry on with: marathon resume {}\n", run_dir);
  }
  return out;
}

}  // namespace marathon
