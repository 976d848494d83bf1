#include "loop/progress.h"

#include <fmt/format.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/eval_result.h"
#include "core/events.h"
#include "core/terminal_text.h"

namespace marathon {

namespace {

std::string short_hash(const std::string& h) { return h.substr(0, 12); }

std::string short_number(double v) { return fmt::format("{:.4g}", v); }

std::string score_text(const State& s) {
  if (!s.best_score) return "best: none yet";
  return fmt::format("best {} {:.4g} ({})", s.goal.metric, *s.best_score,
                     short_hash(s.best_candidate));
}

// The best with its spread (core/confirmation.h), for the summary.
std::string confirmed_best_text(const State& s) {
  return s.best_score ? best_figure_text(s, short_number) : "best: none yet";
}

// A preview of model or candidate text: at most `max` bytes (cut between characters), its line
// breaks as spaces. Escaped with the rest of its line (progress_line, run_summary).
std::string one_line(std::string text, size_t max) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return text;
}

}  // namespace

std::string progress_line(const Event& e, const State& s, bool with_tool_calls) {
  using namespace events;
  std::string line;
  if (is<ToolFinished>(e)) {
    if (!with_tool_calls) return "";
    auto p = payload_of<ToolFinished>(e);
    std::string tag = p.interrupted ? "interrupted" : p.ok ? "ok" : "error";
    line = fmt::format("[{:>4}/{}] {:<10} {:<11} {}", s.used.tool_calls, s.limits.max_tool_calls,
                       p.name, tag, one_line(p.output, 80));
  } else if (is<EvalFinished>(e)) {
    auto p = payload_of<EvalFinished>(e);
    EvalResult r = read_eval_result(p.result);
    std::string verdict = r.correct ? "correct" : "NOT correct";
    std::string score = r.score ? fmt::format("{:.4g}", *r.score) : "-";
    line = fmt::format("           eval #{} {} {}, {} {} [{}{}] | {}", s.evaluations,
                       short_hash(p.candidate), verdict, s.goal.metric, score, to_string(p.status),
                       p.cached ? ", cached" : "", score_text(s));
  } else if (is<EvalRemeasured>(e)) {
    auto p = payload_of<EvalRemeasured>(e);
    EvalResult r = read_eval_result(p.result);
    std::string score =
        r.correct && r.score ? fmt::format("{:.4g}", *r.score) : (r.correct ? "-" : "NOT correct");
    std::optional<Figure> f = figure_of(s, p.candidate);
    line = fmt::format("           re-measure {} #{} ({}) {} {} [{}] | now {} | {}",
                       short_hash(p.candidate), p.index + 1, p.phase, s.goal.metric, score,
                       to_string(p.status), f ? figure_text(*f, short_number) : "-", score_text(s));
  } else if (is<BudgetWarned>(e)) {
    auto p = payload_of<BudgetWarned>(e);
    line = fmt::format("           budget: {} at {:.6g} of {:.6g}", p.which, p.used, p.limit);
  } else if (is<GoalChanged>(e)) {
    auto p = payload_of<GoalChanged>(e);
    line = fmt::format("           goal {}: {} {}", to_string(p.verb),
                       p.status ? to_string(*p.status) : "", one_line(p.progress.value_or(""), 80));
  } else if (is<ModelResponse>(e)) {
    auto p = payload_of<ModelResponse>(e);
    if (p.error)
      line = fmt::format("           model error: {}", one_line(json(*p.error).dump(), 100));
  } else if (is<CompactionInstalled>(e)) {
    auto p = payload_of<CompactionInstalled>(e);
    line = fmt::format("           compaction: {} ({} -> {} tokens)", to_string(p.outcome),
                       p.scope.tokens_before, p.tokens_after);
  } else if (is<CompactionCut>(e)) {
    auto p = payload_of<CompactionCut>(e);
    line = fmt::format(
        "           compaction: cut {} message(s) too large for the window "
        "({} -> {} tokens)",
        p.cuts.size(), p.scope.tokens_before, p.tokens_after);
  } else if (is<LlmUsageRejected>(e)) {
    auto p = payload_of<LlmUsageRejected>(e);
    line = fmt::format("           usage not believed, estimated instead: {}",
                       one_line(json(p.problems).dump(), 100));
  } else if (is<ExecutorJobLost>(e)) {
    auto p = payload_of<ExecutorJobLost>(e);
    line = fmt::format("           executor: {}{}", one_line(p.reason, 100),
                       p.retry ? "; retried once" : "; given up");
  } else if (is<ExecutorSlotQuarantined>(e)) {
    auto p = payload_of<ExecutorSlotQuarantined>(e);
    line = fmt::format("           executor: slot {} quarantined ({} faulted or hung evaluations)",
                       p.slot, p.faults_in_a_row);
  } else if (is<RunPaused>(e)) {
    auto p = payload_of<RunPaused>(e);
    line = fmt::format("           {}: {} {}", e.type, p.reason, one_line(p.message, 100));
  } else if (is<RunFinished>(e)) {
    auto p = payload_of<RunFinished>(e);
    line = fmt::format("           {}: {} {}", e.type, p.reason, one_line(p.summary, 100));
  }
  return terminal_safe(line);  // tool names, outputs, summaries: the model's and candidates' bytes
}

void TerminalProgress::on_event(const Event& e, const State& s) {
  std::string line = progress_line(e, s);
  if (!line.empty()) {
    std::fputs((line + "\n").c_str(), out_);
    std::fflush(out_);
  }
}

std::string action_after(const Event& e, const State& s) {
  using namespace events;
  if (is<ModelRequest>(e)) {
    return s.config.value("policy", "") == "search" ? "choosing the next candidate"
                                                    : "waiting for the model";
  }
  if (is<ToolStarted>(e)) {
    const std::string name = payload_of<ToolStarted>(e).name;
    return "running " + (name.empty() ? std::string("a tool") : terminal_safe(name));
  }
  if (is<ToolFinished>(e) || is<ModelResponse>(e)) return "thinking";
  if (is<RunPaused>(e)) return "paused";
  if (is<RunFinished>(e)) return "finished";
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
    std::unique_lock<std::recursive_mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::seconds(1));
      if (!stop_) draw_locked();
    }
  });
}

StatusLineProgress::~StatusLineProgress() {
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
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
  std::string text = terminal_safe(
      status_text(figures_, figures_.wall_s + (figures_.stopped ? 0 : since), action_));
  // One screen line: a wrapped line could not be redrawn in place.
  winsize ws{};
  size_t width = ::ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 99;
  if (text.size() > width) text.resize(width);
  std::fputs(("\r\033[K" + text).c_str(), out_);
  std::fflush(out_);
}

void StatusLineProgress::on_event(const Event& e, const State& s) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::string line = progress_line(e, s, /*with_tool_calls=*/false);
  if (!line.empty()) std::fputs(("\r\033[K" + line + "\n").c_str(), out_);
  figures_ = status_figures(s);
  have_state_ = true;
  at_last_event_ = std::chrono::steady_clock::now();
  if (std::string a = action_after(e, s); !a.empty()) action_ = a;
  draw_locked();
}

void StatusLineProgress::print_above(const std::function<void()>& write) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (stop_) return write();
  std::fputs("\r\033[K", out_);
  std::fflush(out_);
  write();
  draw_locked();
}

namespace {

// The default logger's sinks behind one that erases the status line around each message.
class AboveSink : public spdlog::sinks::sink {
 public:
  AboveSink(StatusLineProgress& line, std::vector<spdlog::sink_ptr> inner)
      : line_(line), inner_(std::move(inner)) {}
  void log(const spdlog::details::log_msg& msg) override {
    line_.print_above([&] {
      for (auto& s : inner_) {
        if (s->should_log(msg.level)) {
          s->log(msg);
          s->flush();
        }
      }
    });
  }
  void flush() override {
    for (auto& s : inner_) s->flush();
  }
  void set_pattern(const std::string& pattern) override {
    for (auto& s : inner_) s->set_pattern(pattern);
  }
  void set_formatter(std::unique_ptr<spdlog::formatter> f) override {
    for (auto& s : inner_) s->set_formatter(f->clone());
  }

 private:
  StatusLineProgress& line_;
  std::vector<spdlog::sink_ptr> inner_;
};

}  // namespace

LogAboveStatusLine::LogAboveStatusLine(StatusLineProgress& line) {
  std::vector<spdlog::sink_ptr>& sinks = spdlog::default_logger()->sinks();
  for (const auto& s : sinks) saved_.push_back(s);
  auto above = std::make_shared<AboveSink>(line, sinks);
  sinks.assign({above});
}

LogAboveStatusLine::~LogAboveStatusLine() {
  std::vector<spdlog::sink_ptr>& sinks = spdlog::default_logger()->sinks();
  sinks.clear();
  for (const auto& s : saved_) sinks.push_back(std::static_pointer_cast<spdlog::sinks::sink>(s));
}

std::string run_summary(const State& s, const RunReport& report, const std::string& run_dir) {
  const char* outcome = report.outcome == RunOutcome::kFinished ? "finished"
                        : report.outcome == RunOutcome::kPaused ? "paused"
                                                                : "stopped on an error";
  const BudgetUsed& u = s.used;
  std::string out = fmt::format("\n== run {} ({}) ==\n", outcome, report.reason);
  out += fmt::format("  {}\n", confirmed_best_text(s));
  if (std::string ties = ties_text(s, short_number); !ties.empty()) {
    out += fmt::format("  {}\n", ties);
  }
  if (s.baseline_score) out += fmt::format("  baseline score {:.4g}\n", *s.baseline_score);
  if (std::string b = baseline_text(s, short_number); !b.empty()) {
    out += fmt::format("  {}\n", b);
  }
  for (const std::string& cand : s.confirm.pending) {
    if (std::optional<Figure> f = figure_of(s, cand)) {
      out += fmt::format("  not confirmed yet: candidate {} ({})\n", short_hash(cand),
                         figure_text(*f, short_number));
    }
  }
  out += fmt::format("  evaluations {} ({} executed, {} served from cache)\n", s.evaluations,
                     s.evaluations_executed, s.evaluations - s.evaluations_executed);
  if (s.confirm.remeasured > 0) {
    out += fmt::format("  re-measurements {} ({:.1f} s)\n", s.confirm.remeasured,
                       s.confirm.remeasure_s);
  }
  out += fmt::format("  tool calls {}, model calls {}, tokens {} (${:.4f}), wall {:.1f} s\n",
                     u.tool_calls, u.model_calls, u.prompt_tokens + u.completion_tokens, u.cost_usd,
                     u.wall_s);
  if (std::string note = replay_spend_note(s); !note.empty()) out += fmt::format("  {}\n", note);
  out += fmt::format("  log {}/events.db\n", run_dir);
  if (report.outcome != RunOutcome::kFinished) {
    out += fmt::format("  carry on with: marathon resume {}\n", run_dir);
  }
  return terminal_safe_lines(out);
}

}  // namespace marathon
