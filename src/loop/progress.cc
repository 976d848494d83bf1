#include "loop/progress.h"

#include <fmt/format.h>

#include "core/eval_result.h"
#include "core/events.h"

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
  using namespace events;
  std::string line;
  if (is<ToolFinished>(e)) {
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
  } else if (is<RunPaused>(e)) {
    auto p = payload_of<RunPaused>(e);
    line = fmt::format("           {}: {} {}", e.type, p.reason, one_line(p.message, 100));
  } else if (is<RunFinished>(e)) {
    auto p = payload_of<RunFinished>(e);
    line = fmt::format("           {}: {} {}", e.type, p.reason, one_line(p.summary, 100));
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
