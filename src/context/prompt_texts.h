// The texts the runtime writes to the model itself: the user messages it adds to the conversation
// (a budget note, a goal turn, a reply it could not use) and the output it gives for a tool call a
// crash cut short. Each is a template in prompt_texts.cc that the loop fills in; they are part of
// every prompt, so the scripted-run tests pin them byte for byte. (The tool-call errors are the
// registry's, tools/tool_registry.h.)
#pragma once

#include <cstdint>
#include <string>

namespace marathon::context {

// user.message (reason budget): `which` budget is at `percent` of its limit; `budget` is the
// budget line (goal/budget.h).
// `predicted`: the note goes out because the next step is predicted to take `which` past 90%.
std::string budget_note(const std::string& which, double percent, const std::string& budget,
                        bool predicted = false);

// user.message (reason goal_turn): the model stopped without `finish` while the goal is open.
// `progress` says the best so far.
std::string goal_turn_note(const std::string& budget, const std::string& progress,
                           int64_t evals_since_improvement);

// user.message (reason model_error): the last reply was malformed (`why`).
std::string unusable_reply_note(const std::string& why);

// tool.finished output of a call in flight at a crash that was not re-run (not idempotent).
std::string interrupted_tool_output(const std::string& tool);

// tool.finished output (not_run) of a call of the last turn that the run ended before: `reason`
// and `summary` are the run.finished's.
std::string not_run_tool_output(const std::string& reason, const std::string& summary);

// What a branch's goal adds to the task's objective (branch `branch` of `branches`), so that the
// model knows it is one of several (and a scripted test model can tell the branches apart).
std::string branch_note(int branch, int branches);

// ledger.noted (finding) in every other branch when branch `from` reaches the run's best:
// `candidate` is the short hash that `revert` takes.
std::string branch_best_note(int from, const std::string& metric, double score,
                             const std::string& candidate);

// ledger.noted copied from branch `from` into the others.
std::string branch_copied_note(int from, const std::string& text);

}  // namespace marathon::context
