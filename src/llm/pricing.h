// Prices in dollars per million tokens: a small built-in table by model-name prefix, which config
// can extend or override. Unknown models (local servers) cost 0.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "llm/provider.h"

namespace marathon::llm {

class PriceTable {
 public:
  PriceTable();  // the built-in table
  // Adds or replaces entries from {"MODEL_PREFIX": {"input": $/Mtok, "output": $/Mtok}, ...}.
  // Throws std::invalid_argument naming the key when an entry is not of that shape.
  void merge(const json& table);
  void set(const std::string& model_prefix, Price price) { prices_[model_prefix] = price; }
  // Longest matching prefix of `model` (or of the part after the last '/', for OpenRouter-style
  // "vendor/model" names).
  std::optional<Price> lookup(const std::string& model) const;

 private:
  std::map<std::string, Price> prices_;
};

double cost_usd(const Usage& usage, const Price& price);

}  // namespace marathon::llm
