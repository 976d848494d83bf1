#include "llm/pricing.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace marathon::llm {

PriceTable::PriceTable() {
  // List prices (USD per million tokens: input, output, cache reads). OpenAI bills cached prompt
  // tokens (prompt_tokens_details.cached_tokens) at its cached-input rate and has no cache writes;
  // Anthropic's cache reads and writes are at their own rates. Config overrides them.
  prices_ = {
      {"gpt-4o", {2.50, 10.00, 1.25}},
      {"gpt-4o-mini", {0.15, 0.60, 0.075}},
      {"gpt-4.1", {2.00, 8.00, 0.50}},
      {"gpt-4.1-mini", {0.40, 1.60, 0.10}},
      {"gpt-4.1-nano", {0.10, 0.40, 0.025}},
      {"gpt-5", {1.25, 10.00, 0.125}},
      {"gpt-5-mini", {0.25, 2.00, 0.025}},
      {"gpt-5-nano", {0.05, 0.40, 0.005}},
      {"o3", {2.00, 8.00, 0.50}},
      {"o4-mini", {1.10, 4.40, 0.275}},
      {"claude-opus-4", anthropic_cache_rates({15.00, 75.00})},
      {"claude-sonnet-4", anthropic_cache_rates({3.00, 15.00})},
      {"claude-3-7-sonnet", anthropic_cache_rates({3.00, 15.00})},
      {"claude-3-5-haiku", anthropic_cache_rates({0.80, 4.00})},
      {"claude-haiku-4", anthropic_cache_rates({1.00, 5.00})},
  };
}

Price anthropic_cache_rates(Price p) {
  if (p.cache_read_per_mtok < 0) p.cache_read_per_mtok = 0.1 * p.input_per_mtok;
  if (p.cache_write_per_mtok < 0) p.cache_write_per_mtok = 1.25 * p.input_per_mtok;
  return p;
}

Price price_from_json(const json& entry, const std::string& where) {
  auto rate = [&](const char* key, bool required) -> double {
    if (!entry.contains(key)) {
      if (required) {
        throw std::invalid_argument(where + ": expected {input = $/Mtok, output = $/Mtok}, " + key +
                                    " is missing");
      }
      return -1;
    }
    const json& v = entry[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      throw std::invalid_argument(where + "." + key +
                                  ": expected a non-negative number of $/Mtok, got " + v.dump());
    }
    return v.get<double>();
  };
  if (!entry.is_object()) {
    throw std::invalid_argument(where + ": expected {input = $/Mtok, output = $/Mtok}");
  }
  return Price{rate("input", true), rate("output", true), rate("cache_read", false),
               rate("cache_write", false)};
}

void PriceTable::merge(const json& table) {
  if (!table.is_object()) throw std::invalid_argument("prices: expected a table of models");
  for (const auto& [model, entry] : table.items()) {
    prices_[model] = price_from_json(entry, "prices." + model);
  }
}

std::optional<Price> PriceTable::lookup(const std::string& model) const {
  auto longest = [&](const std::string& name) -> std::optional<Price> {
    std::optional<Price> best;
    size_t best_len = 0;
    for (const auto& [prefix, price] : prices_) {
      if (name.rfind(prefix, 0) == 0 && prefix.size() >= best_len) {
        best = price;
        best_len = prefix.size();
      }
    }
    return best;
  };
  if (auto p = longest(model)) return p;
  auto slash = model.rfind('/');
  if (slash != std::string::npos) return longest(model.substr(slash + 1));
  return std::nullopt;
}

double cost_usd(const Usage& usage, const Price& price) {
  auto count = [](int64_t n) { return static_cast<double>(std::max<int64_t>(0, n)); };
  auto rate = [](double r) { return std::isfinite(r) && r > 0 ? r : 0.0; };
  const double read = count(usage.cache_read_tokens);
  const double write = count(usage.cache_write_tokens);
  const double uncached = std::max(0.0, count(usage.prompt_tokens) - read - write);
  const double input = rate(price.input_per_mtok);
  const double read_rate = price.cache_read_per_mtok < 0 ? input : rate(price.cache_read_per_mtok);
  const double write_rate =
      price.cache_write_per_mtok < 0 ? input : rate(price.cache_write_per_mtok);
  return (uncached * input + read * read_rate + write * write_rate +
          count(usage.completion_tokens) * rate(price.output_per_mtok)) /
         1e6;
}

}  // namespace marathon::llm
