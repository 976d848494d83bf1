#include "llm/pricing.h"

#include <stdexcept>

namespace marathon::llm {

PriceTable::PriceTable() {
  // List prices (USD per million tokens, input / output). Config overrides them.
  prices_ = {
      {"gpt-4o", {2.50, 10.00}},
      {"gpt-4o-mini", {0.15, 0.60}},
      {"gpt-4.1", {2.00, 8.00}},
      {"gpt-4.1-mini", {0.40, 1.60}},
      {"gpt-4.1-nano", {0.10, 0.40}},
      {"gpt-5", {1.25, 10.00}},
      {"gpt-5-mini", {0.25, 2.00}},
      {"gpt-5-nano", {0.05, 0.40}},
      {"o3", {2.00, 8.00}},
      {"o4-mini", {1.10, 4.40}},
      {"claude-opus-4", {15.00, 75.00}},
      {"claude-sonnet-4", {3.00, 15.00}},
      {"claude-3-7-sonnet", {3.00, 15.00}},
      {"claude-3-5-haiku", {0.80, 4.00}},
      {"claude-haiku-4", {1.00, 5.00}},
  };
}

void PriceTable::merge(const json& table) {
  if (!table.is_object()) throw std::invalid_argument("prices: expected a table of models");
  for (const auto& [model, entry] : table.items()) {
    if (!entry.is_object() || !entry.contains("input") || !entry.contains("output") ||
        !entry["input"].is_number() || !entry["output"].is_number()) {
      throw std::invalid_argument("prices." + model +
                                  ": expected {input = $/Mtok, output = $/Mtok}");
    }
    prices_[model] = {entry["input"].get<double>(), entry["output"].get<double>()};
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
  return (static_cast<double>(usage.prompt_tokens) * price.input_per_mtok +
          static_cast<double>(usage.completion_tokens) * price.output_per_mtok) /
         1e6;
}

}  // namespace marathon::llm
