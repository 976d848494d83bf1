#include "loop/stops.h"

#include <algorithm>

#include "core/events.h"
#include "core/turn_tracker.h"

namespace marathon {

StopDecision decide_stop(const State& s, const BudgetUsed& used, const BudgetUsed& next_step,
                         bool interrupted, bool stop_requested) {
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
    for (const BudgetItem& b :
         budgets_predicted_to_cross(s.limits, used, next_step, s.budget_warnings)) {
      if (std::none_of(d.notes.begin(), d.notes.end(),
                       [&](const BudgetItem& o) { return o.which == b.which; })) {
        d.notes.push_back(b);
      }
    }
  }
  return d;
}

BudgetUsed predicted_step(const State& s, const std::vector<Event>& events) {
  BudgetUsed next;
  const int64_t n = s.used.model_calls;
  if (n <= 0) return next;
  const double calls = static_cast<double>(n);
  next.prompt_tokens = s.used.prompt_tokens / n;
  next.completion_tokens = s.used.completion_tokens / n;
  next.cost_usd = s.used.cost_usd / calls;
  next.tool_calls = (s.used.tool_calls + n - 1) / n;
  next.wall_s = s.used.wall_s / calls;
  next.gpu_s = s.used.gpu_s / calls;
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (!is<events::ModelResponse>(*it)) continue;
    const events::ModelResponse p = payload_of<events::ModelResponse>(*it);
    next.prompt_tokens = std::max<int64_t>(next.prompt_tokens, p.usage.prompt_tokens);
    next.completion_tokens = std::max<int64_t>(next.completion_tokens, p.usage.completion_tokens);
    next.cost_usd = std::max(next.cost_usd, p.cost_usd);
    if (p.message.is_object()) {
      next.tool_calls =
          std::max<int64_t>(next.tool_calls, static_cast<int64_t>(tool_calls_of(p.message).size()));
    }
    break;
  }
  return next;
}

}  // namespace marathon
