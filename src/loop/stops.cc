#include "loop/stops.h"

namespace marathon {

StopDecision decide_stop(const State& s, const BudgetUsed& used, bool interrupted,
                         bool stop_requested) {
  using K = StopDecision::Kind;
  StopDecision d;
  if (s.done) {
    d.kind = K::kDone;
  } else if (interrupted) {
    d.kind = K::kInterrupted;
  } else if (stop_requested) {
    d.kind = K::kStopRequested;
  } else if (s.goal.status == GoalStatus::kPaused) {
    d.kind = K::kGoalPaused;
  } else if (s.goal.status == GoalStatus::kCleared) {
    d.kind = K::kGoalCleared;
  } else if (target_met(s.goal.direction, s.best_score, s.goal.target)) {
    d.kind = K::kTarget;
  } else if ((d.exhausted = exhausted_budget(s.limits, used))) {
    d.kind = K::kBudget;
  } else {
    d.notes = budgets_to_warn(s.limits, used, s.budget_warnings);
  }
  return d;
}

}  // namespace marathon
