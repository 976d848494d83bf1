#include "cli/budget_flags.h"

#include "goal/limits.h"

namespace marathon::cli {

void add_budget_flags(CLI::App* cmd, BudgetFlags& f, BudgetDefaults defaults) {
  const bool run = defaults == BudgetDefaults::kRun;
  const char* original = "(default: the original's)";
  cmd->add_option("--max-tool-calls", f.max_tool_calls,
                  std::string("Tool-call budget ") + (run ? "(default 1000)" : original));
  cmd->add_option("--max-hours", f.max_hours,
                  std::string("Wall-time budget in hours ") + (run ? "(default 24)" : original));
  cmd->add_option("--max-cost", f.max_cost,
                  std::string("Cost budget in USD ") + (run ? "(default: none)" : original));
  cmd->add_option("--max-tokens", f.max_tokens,
                  std::string("Token budget ") + (run ? "(default: none)" : original));
  cmd->add_option("--max-gpu-seconds", f.max_gpu_s,
                  std::string("GPU-time budget ") + (run ? "(default: none)" : original));
}

void check_budget_flags(const BudgetFlags& f,
                        std::vector<std::pair<const char*, std::optional<std::string>>>& checks) {
  if (f.max_tool_calls) {
    checks.emplace_back("--max-tool-calls",
                        limit_problem("max_tool_calls", double(*f.max_tool_calls), true));
  }
  if (f.max_hours) {
    checks.emplace_back("--max-hours", range_problem(*f.max_hours, 0, true, kMaxWallS / 3600));
  }
  if (f.max_cost) {
    checks.emplace_back("--max-cost", limit_problem("max_cost_usd", *f.max_cost, false));
  }
  if (f.max_tokens) {
    checks.emplace_back("--max-tokens", limit_problem("max_tokens", double(*f.max_tokens), true));
  }
  if (f.max_gpu_s) {
    checks.emplace_back("--max-gpu-seconds", limit_problem("max_gpu_s", *f.max_gpu_s, false));
  }
}

std::optional<events::BudgetSpec> budget_spec(const BudgetFlags& f) {
  events::BudgetSpec b;
  b.max_tool_calls = f.max_tool_calls;
  if (f.max_hours) b.max_wall_s = *f.max_hours * 3600.0;
  b.max_cost_usd = f.max_cost;
  b.max_tokens = f.max_tokens;
  b.max_gpu_s = f.max_gpu_s;
  if (b == events::BudgetSpec{}) return std::nullopt;
  return b;
}

}  // namespace marathon::cli
