#include "goal/budget.h"

#include <fmt/format.h>

#include <algorithm>

namespace marathon {

std::vector<BudgetItem> budget_items(const BudgetLimits& limits, const BudgetUsed& used,
                                     double warn_fraction) {
  std::vector<BudgetItem> items;
  auto add = [&](const char* which, double u, double limit) {
    if (!(limit > 0)) return;
    BudgetItem it{which, u, limit};
    it.over = u >= limit;
    it.near = !it.over && u >= warn_fraction * limit;
    items.push_back(it);
  };
  add("tool_calls", static_cast<double>(used.tool_calls),
      static_cast<double>(limits.max_tool_calls));
  add("wall_time", used.wall_s, limits.max_wall_s);
  add("tokens", static_cast<double>(used.prompt_tokens + used.completion_tokens),
      static_cast<double>(limits.max_tokens));
  add("cost", used.cost_usd, limits.max_cost_usd);
  add("gpu_time", used.gpu_s, limits.max_gpu_s);
  return items;
}

std::optional<BudgetItem> exhausted_budget(const BudgetLimits& limits, const BudgetUsed& used) {
  for (const auto& it : budget_items(limits, used)) {
    if (it.over) return it;
  }
  return std::nullopt;
}

std::vector<BudgetItem> budgets_to_warn(const BudgetLimits& limits, const BudgetUsed& used,
                                        const std::vector<std::string>& already_warned,
                                        double warn_fraction) {
  std::vector<BudgetItem> out;
  for (const auto& it : budget_items(limits, used, warn_fraction)) {
    if ((it.near || it.over) &&
        std::find(already_warned.begin(), already_warned.end(), it.which) == already_warned.end()) {
      out.push_back(it);
    }
  }
  return out;
}

std::vector<BudgetItem> budgets_predicted_to_cross(const BudgetLimits& limits,
                                                   const BudgetUsed& used,
                                                   const BudgetUsed& next_step,
                                                   const std::vector<std::string>& already_warned,
                                                   double warn_fraction) {
  BudgetUsed after = used;
  after.tool_calls += std::max<int64_t>(0, next_step.tool_calls);
  after.prompt_tokens += std::max<int64_t>(0, next_step.prompt_tokens);
  after.completion_tokens += std::max<int64_t>(0, next_step.completion_tokens);
  after.cost_usd += std::max(0.0, next_step.cost_usd);
  after.wall_s += std::max(0.0, next_step.wall_s);
  after.gpu_s += std::max(0.0, next_step.gpu_s);
  std::vector<BudgetItem> now = budget_items(limits, used, warn_fraction);
  std::vector<BudgetItem> out;
  for (const BudgetItem& it : budget_items(limits, after, warn_fraction)) {
    if (!(it.near || it.over)) continue;
    if (std::find(already_warned.begin(), already_warned.end(), it.which) != already_warned.end()) {
      continue;
    }
    // Reported with what is used now: the step has not happened yet.
    auto cur = std::find_if(now.begin(), now.end(),
                            [&](const BudgetItem& n) { return n.which == it.which; });
    out.push_back(cur != now.end() ? *cur : it);
  }
  return out;
}

std::string budget_line(const BudgetLimits& limits, const BudgetUsed& used) {
  std::vector<std::string> parts;
  for (const auto& it : budget_items(limits, used)) {
    if (it.which == "tool_calls") {
      parts.push_back(fmt::format("tool calls {}/{}", static_cast<long long>(it.used),
                                  static_cast<long long>(it.limit)));
    } else if (it.which == "wall_time") {
      parts.push_back(fmt::format("wall time {:.1f}/{:.1f} h", it.used / 3600, it.limit / 3600));
    } else if (it.which == "tokens") {
      parts.push_back(fmt::format("tokens {}/{}", static_cast<long long>(it.used),
                                  static_cast<long long>(it.limit)));
    } else if (it.which == "cost") {
      parts.push_back(fmt::format("cost ${:.2f}/${:.2f}", it.used, it.limit));
    } else {
      parts.push_back(fmt::format("GPU time {:.0f}/{:.0f} s", it.used, it.limit));
    }
  }
  if (parts.empty()) return "no limits";
  std::string s = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) s += ", " + parts[i];
  return s;
}

}  // namespace marathon
