// The one stop decision: what the runner must do before it asks the model again, as a pure
// function of the folded state, the budget used so far, whether a signal asked it to stop and
// whether a client did (run.stop_requested since the last run.resumed, which the runner notes). The
// runner acts on it at the top of every step (check_stops) and consults it after a response, to
// leave that response's calls for the next step when a stop or a budget note is due.
#pragma once

#include <optional>
#include <vector>

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
  std::vector<BudgetItem> notes;        // kNone: budgets near their limit not yet warned about
  bool acts() const { return kind != Kind::kNone || !notes.empty(); }
};

// In this order: done, interrupted, stop requested, goal paused, goal cleared, target met, a budget
// used up, and otherwise the budgets to warn about. `used` is the state's use with the wall time of
// now (and, after a response, that response counted).
StopDecision decide_stop(const State& s, const BudgetUsed& used, bool interrupted,
                         bool stop_requested);

}  // namespace marathon
