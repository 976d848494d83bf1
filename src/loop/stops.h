// The one stop decision: what the runner must do before it asks the model again, as a pure
// function of the folded state, the budget used so far, whether a signal asked it to stop and
// whether a client did (run.stop_requested since the last run.resumed, which the runner notes). The
// runner acts on it at the top of every step (check_stops) and consults it after a response, to
// leave that response's calls for the next step when a stop or a budget note is due.
#pragma once

#include <optional>
#include <vector>

#include "core/event.h"
#include "core/state.h"
#include "goal/budget.h"

namespace marathon {

struct StopDecision {
  enum class Kind {
    kNone,           // carry on (after noting `notes`, if any)
    kDone,           // the run has finished already
    kInterrupted,    // SIGINT or SIGTERM: pause
    kStopRequested,  // `marathon stop` or a control client: pause
    kGoalPaused,     // pause until `marathon goal resume`
    kGoalCleared,    // finish
    kTarget,         // the best correct score reached the target: finish
    kBudget,         // `exhausted` is used up: finish
  };
  Kind kind = Kind::kNone;
  std::optional<BudgetItem> exhausted;  // kBudget
  // kNone: budgets not yet warned about that are near their limit, or that the next step is
  // predicted to take past it (BudgetItem neither near nor over: see predicted()).
  std::vector<BudgetItem> notes;
  static bool predicted(const BudgetItem& b) { return !b.near && !b.over; }
  bool acts() const { return kind != Kind::kNone || !notes.empty(); }
};

// In this order: done, interrupted, stop requested, goal paused, goal cleared, target met, a budget
// used up, and otherwise the budgets to warn about: those at the warning fraction and those
// `next_step` (predicted_step) would take past it, however far it would jump, each once. `used` is
// the state's use with the wall time of now (and, after a response, that response counted).
StopDecision decide_stop(const State& s, const BudgetUsed& used, const BudgetUsed& next_step,
                         bool interrupted, bool stop_requested);

// What the next step (a model call and the tool calls it makes) is predicted to add to the budget
// use: the mean of the steps so far or the last model.response of `events`, whichever is larger.
BudgetUsed predicted_step(const State& s, const std::vector<Event>& events);

}  // namespace marathon
