#include "llm/pricing.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "llm/model_table.h"

namespace marathon::llm {

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
  if (slash != std::string::npos) {
    if (auto p = longest(model.substr(slash + 1))) return p;
  }
  const ModelInfo* info = find_model(model);
  return info != nullptr ? info->price : std::nullopt;
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
