#include "goal/limits.h"

#include <fmt/format.h>

#include <cmath>

namespace marathon {

std::optional<std::string> range_problem(double value, double min, bool min_inclusive, double max) {
  if (std::isnan(value)) return "must be a number, got nan";
  if (std::isinf(value)) return fmt::format("must be finite, got {}", value);
  if (min_inclusive ? value < min : value <= min) {
    return fmt::format("must be {} {:g}, got {:g}", min_inclusive ? ">=" : ">", min, value);
  }
  if (value > max) return fmt::format("must be <= {:g}, got {:g}", max, value);
  return std::nullopt;
}

std::optional<std::string> limit_problem(std::string_view key, double value, bool is_integer) {
  bool integer = key == "max_tool_calls" || key == "max_tokens";
  if (integer && !is_integer) {
    if (!std::isfinite(value) || value != std::floor(value)) {
      return fmt::format("must be a whole number (an integer), got {:g}", value);
    }
    return fmt::format("must be written as an integer, got the float {:g}", value);
  }
  double max = key == "max_tool_calls" ? kMaxToolCalls
               : key == "max_tokens"   ? kMaxTokens
               : key == "max_wall_s"   ? kMaxWallS
               : key == "max_cost_usd" ? kMaxCostUsd
                                       : kMaxGpuS;
  return range_problem(value, 0, true, max);
}

std::optional<std::string> timeout_problem(double seconds) {
  return range_problem(seconds, 0, false, kMaxEvaluatorTimeoutS);
}

std::optional<std::string> target_problem(double value) {
  if (std::isnan(value)) return "must be a number, got nan";
  if (std::isinf(value)) return fmt::format("must be finite, got {}", value);
  return std::nullopt;
}

std::optional<std::string> price_problem(double value) {
  return range_problem(value, 0, true, kMaxPricePerMillion);
}

}  // namespace marathon
