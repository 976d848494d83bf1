#include "context/prompt_texts.h"

#include <fmt/format.h>

namespace marathon::context {
namespace {

constexpr const char* kBudgetNote =
    "Budget note: {which} is at {percent:.0f}% of its limit{predicted} ({budget}). Wrap up: "
    "evaluate your "
    "best idea, note what you learned, and call `finish` with a summary before the run is "
    "stopped.";

constexpr const char* kGoalTurn =
    "You stopped without calling `finish`, but the goal is still open and budget remains "
    "({budget}). Progress so far: {progress}; {evals} evaluation(s) since the last improvement. "
    "Keep working toward the goal: try the next idea, evaluate it, note what you learn. Call "
    "`finish` with a summary only when you are done.";

constexpr const char* kUnusableReply =
    "Your previous reply could not be used ({why}). Reply again: text and/or tool calls with "
    "JSON arguments.";

constexpr const char* kInterruptedTool =
    "interrupted: the runner stopped while `{tool}` was running and it was not re-run on resume "
    "(it is not idempotent). Its effects, if any, are unknown: check before you retry it.";

constexpr const char* kBranchNote =
    "You are branch {branch} of {branches} working on this goal at the same time, each with its "
    "own workspace. Findings and dead ends the other branches note appear in your ledger marked "
    "[branch N]; an evaluation another branch already ran is served from the shared cache. "
    "Explore ideas the ledger does not show yet.";

constexpr const char* kBranchBest =
    "[branch {from}] the run's best so far: {metric} {score:.6g}, candidate {candidate}; `revert` "
    "with candidate \"{candidate}\" forks your workspace from it";

constexpr const char* kBranchCopy = "[branch {from}] {text}";

constexpr const char* kNotRunTool = "not run: the run ended before this call ({reason}: {summary})";

}  // namespace

std::string budget_note(const std::string& which, double percent, const std::string& budget,
                        bool predicted) {
  return fmt::format(
      fmt::runtime(kBudgetNote), fmt::arg("which", which), fmt::arg("percent", percent),
      fmt::arg("predicted",
               predicted ? ", and the next step is predicted to take it past 90%" : ""),
      fmt::arg("budget", budget));
}

std::string goal_turn_note(const std::string& budget, const std::string& progress,
                           int64_t evals_since_improvement) {
  return fmt::format(fmt::runtime(kGoalTurn), fmt::arg("budget", budget),
                     fmt::arg("progress", progress), fmt::arg("evals", evals_since_improvement));
}

std::string unusable_reply_note(const std::string& why) {
  return fmt::format(fmt::runtime(kUnusableReply), fmt::arg("why", why));
}

std::string interrupted_tool_output(const std::string& tool) {
  return fmt::format(fmt::runtime(kInterruptedTool), fmt::arg("tool", tool));
}

std::string not_run_tool_output(const std::string& reason, const std::string& summary) {
  return fmt::format(fmt::runtime(kNotRunTool), fmt::arg("reason", reason),
                     fmt::arg("summary", summary));
}

std::string branch_note(int branch, int branches) {
  return fmt::format(fmt::runtime(kBranchNote), fmt::arg("branch", branch),
                     fmt::arg("branches", branches));
}

std::string branch_best_note(int from, const std::string& metric, double score,
                             const std::string& candidate) {
  return fmt::format(fmt::runtime(kBranchBest), fmt::arg("from", from), fmt::arg("metric", metric),
                     fmt::arg("score", score), fmt::arg("candidate", candidate));
}

std::string branch_copied_note(int from, const std::string& text) {
  return fmt::format(fmt::runtime(kBranchCopy), fmt::arg("from", from), fmt::arg("text", text));
}

}  // namespace marathon::context
