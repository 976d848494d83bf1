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
  // Adds or replaces entries from {"MODEL_PREFIX": {"input": $/Mtok, "output": $/Mtok,
  // "cache_read"?: $/Mtok, "cache_write"?: $/Mtok}, ...}. Throws std::invalid_argument naming the
  // key when an entry is not of that shape or a rate is negative.
  void merge(const json& table);
  void set(const std::string& model_prefix, Price price) { prices_[model_prefix] = price; }
  // Longest matching prefix of `model` (or of the part after the last '/', for OpenRouter-style
  // "vendor/model" names).
  std::optional<Price> lookup(const std::string& model) const;

 private:
  std::map<std::string, Price> prices_;
};

// Dollars for one call: uncached prompt tokens at the input rate, cache reads and writes at their
// rates (the input rate when unset), completion tokens at the output rate. Never negative: a
// negative count or rate counts as 0.
double cost_usd(const Usage& usage, const Price& price);

// Anthropic's prompt-caching rates where `p` leaves them unset: reads 0.1x, writes 1.25x input.
Price anthropic_cache_rates(Price p);

// A price from {input, output, cache_read?, cache_write?} ($/Mtok, each finite and >= 0). Throws
// std::invalid_argument naming `where` and the key.
Price price_from_json(const json& entry, const std::string& where);

}  // namespace marathon::llm
