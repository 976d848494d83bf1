#include "loop/progress.h"

#include <fmt/format.h>

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

void TerminalProgress::on_event(const Event& e, const State& s) {
  const json& p = e.payload;
  std::string line;
  if (e.type == ev::kToolFinished) {
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
  } else if (e.type == ev::kRunPaused || e.type == ev::kRunFinished) {
    line = fmt::format("           {}: {} {}", e.type, p.value("reason", ""),
                       one_line(p.value("message", p.value("summary", "")), 100));
  }
  if (!line.empty()) {
    std::fputs((line + "\n").c_str(), out_);
    std::fflush(out_);
  }
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
