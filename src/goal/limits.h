// The ranges of the numbers that bound a run: budget limits, the evaluator's timeout, a score
// target, prices. The same rules hold wherever a value is set (task.toml or a command-line flag),
// so a run never starts with a NaN budget, a timeout of a thousand years or 1e30 tool calls
// (which no int64 holds). Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace marathon {

inline constexpr double kMaxEvaluatorTimeoutS = 86400;  // one day
inline constexpr double kMaxWallS = 366 * 86400.0;      // a year
inline constexpr double kMaxToolCalls = 1e9;
inline constexpr double kMaxTokens = 1e15;
inline constexpr double kMaxCostUsd = 1e9;
inline constexpr double kMaxGpuS = 1e9;
inline constexpr double kMaxPricePerMillion = 1e6;  // USD per million tokens

// What is wrong with `value` for the range [min, max] (min excluded unless min_inclusive): nan,
// an infinity, or out of range; nullopt when it is in range.
std::optional<std::string> range_problem(double value, double min, bool min_inclusive, double max);

// What is wrong with `value` for budget limit `key` (max_tool_calls, max_wall_s, max_tokens,
// max_cost_usd, max_gpu_s), or nullopt when it is usable. `is_integer` says whether the value was
// written as an integer (max_tool_calls and max_tokens must be). 0 means "no limit".
std::optional<std::string> limit_problem(std::string_view key, double value, bool is_integer);

// The same for an evaluator timeout in seconds (> 0, at most a day).
std::optional<std::string> timeout_problem(double seconds);

// A score target: any finite number.
std::optional<std::string> target_problem(double value);

// A price in USD per million tokens: finite, >= 0, at most kMaxPricePerMillion.
std::optional<std::string> price_problem(double value);

}  // namespace marathon
