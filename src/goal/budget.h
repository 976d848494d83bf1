// Budget: which limits of a run are near or over, given its limits and what it used. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/state.h"

namespace marathon {

struct BudgetItem {
  std::string which;  // tool_calls | wall_time | tokens | cost | gpu_time
  double used = 0;
  double limit = 0;  // > 0 (items without a limit are not reported)
  double fraction() const { return used / limit; }
  bool near = false;  // used >= warn_fraction * limit (and not over)
  bool over = false;  // used >= limit
};

inline constexpr double kDefaultWarnFraction = 0.9;

// One item per budget that has a limit, in the order above.
std::vector<BudgetItem> budget_items(const BudgetLimits& limits, const BudgetUsed& used,
                                     double warn_fraction = kDefaultWarnFraction);

// The first budget that is used up, if any (the run stops on it).
std::optional<BudgetItem> exhausted_budget(const BudgetLimits& limits, const BudgetUsed& used);

// Budgets near their limit that are not yet in `already_warned` (State::budget_warnings): each
// should get one budget.warned event.
std::vector<BudgetItem> budgets_to_warn(const BudgetLimits& limits, const BudgetUsed& used,
                                        const std::vector<std::string>& already_warned,
                                        double warn_fraction = kDefaultWarnFraction);

// Budgets the next step is predicted to take past warn_fraction of their limit (not yet in
// `already_warned`): `used` plus `next_step` (what a step has cost so far: the previous steps'
// mean or the last one's, whichever is larger) crosses it. The wrap-up note goes out before the
// step, however far the step would jump.
std::vector<BudgetItem> budgets_predicted_to_cross(const BudgetLimits& limits,
                                                   const BudgetUsed& used,
                                                   const BudgetUsed& next_step,
                                                   const std::vector<std::string>& already_warned,
                                                   double warn_fraction = kDefaultWarnFraction);

// One line for the goal block, e.g. "tool calls 412/1000, wall time 3.1/24.0 h, cost $1.20/$10.00".
std::string budget_line(const BudgetLimits& limits, const BudgetUsed& used);

}  // namespace marathon
