#include "context/context_config.h"

#include <fmt/format.h>

#include <stdexcept>

namespace marathon::context {
namespace {

double read_fraction(const json& obj, const char* key, double fallback) {
  if (!obj.contains(key)) return fallback;
  const json& v = obj.at(key);
  if (!v.is_number()) {
    throw std::invalid_argument(
        fmt::format("config context.{}: expected a number, got {}", key, v.dump()));
  }
  double d = v.get<double>();
  if (!(d > 0.0 && d <= 1.0)) {
    throw std::invalid_argument(
        fmt::format("config context.{}: {} is not a fraction in (0, 1]", key, d));
  }
  return d;
}

int64_t read_count(const json& obj, const char* key, int64_t fallback, int64_t min_value) {
  if (!obj.contains(key)) return fallback;
  const json& v = obj.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < min_value) {
    throw std::invalid_argument(
        fmt::format("config {}: expected an integer >= {}, got {}", key, min_value, v.dump()));
  }
  return v.get<int64_t>();
}

}  // namespace

ContextConfig ContextConfig::from_run_config(const json& config) {
  ContextConfig c;
  if (!config.is_object()) return c;
  if (config.contains("context_window") && !config.at("context_window").is_null()) {
    c.context_window = read_count(config, "context_window", c.context_window, 1024);
  }
  if (!config.contains("context") || config.at("context").is_null()) return c;
  const json& ctx = config.at("context");
  if (!ctx.is_object()) {
    throw std::invalid_argument("config context: expected an object, got " + ctx.dump());
  }
  c.soft_threshold = read_fraction(ctx, "soft_threshold", c.soft_threshold);
  c.hard_threshold = read_fraction(ctx, "hard_threshold", c.hard_threshold);
  c.keep_recent_outputs = read_fraction(ctx, "keep_recent_outputs", c.keep_recent_outputs);
  c.keep_recent_turns = read_fraction(ctx, "keep_recent_turns", c.keep_recent_turns);
  c.max_summary = read_fraction(ctx, "max_summary", c.max_summary);
  c.max_ledger = read_fraction(ctx, "max_ledger", c.max_ledger);
  c.noop_regrow = read_fraction(ctx, "noop_regrow", c.noop_regrow);
  c.ledger_best = static_cast<int>(read_count(ctx, "ledger_best", c.ledger_best, 0));
  c.ledger_recent = static_cast<int>(read_count(ctx, "ledger_recent", c.ledger_recent, 0));
  c.elide_min_bytes = read_count(ctx, "elide_min_bytes", c.elide_min_bytes, 0);
  if (c.soft_threshold > c.hard_threshold) {
    throw std::invalid_argument(
        fmt::format("config context: soft_threshold {} is above hard_threshold {}",
                    c.soft_threshold, c.hard_threshold));
  }
  return c;
}

}  // namespace marathon::context
