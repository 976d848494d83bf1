// The budget flags `run` and `fork` share: --max-tool-calls, --max-hours, --max-cost,
// --max-tokens, --max-gpu-seconds, their ranges (goal/limits.h) and the BudgetSpec they make.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/events.h"

namespace marathon::cli {

struct BudgetFlags {
  std::optional<int64_t> max_tool_calls;
  std::optional<double> max_hours;
  std::optional<double> max_cost;
  std::optional<int64_t> max_tokens;
  std::optional<double> max_gpu_s;
};

// `defaults`: what an absent flag means, for the help texts: the run's defaults (run) or the
// original's limits (fork).
enum class BudgetDefaults { kRun, kOriginal };
void add_budget_flags(CLI::App* cmd, BudgetFlags& flags, BudgetDefaults defaults);

// Appends ("--flag", problem) for each flag given; a problem is set when its value is out of range.
void check_budget_flags(const BudgetFlags& flags,
                        std::vector<std::pair<const char*, std::optional<std::string>>>& checks);

// The limits the flags given set; nullopt when none was given.
std::optional<events::BudgetSpec> budget_spec(const BudgetFlags& flags);

}  // namespace marathon::cli
