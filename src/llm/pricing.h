// Prices in dollars per million tokens: the built-in prices of the model table (model_table.h:
// exact name or dated snapshot, never a shorter prefix), under entries that config adds by
// model-name prefix. A model neither prices has no price: its calls cost 0 and the runtime says so.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "llm/provider.h"

namespace marathon::llm {

class PriceTable {
 public:
  PriceTable() = default;  // the built-in prices alone
  // Adds or replaces prefix entries from {"MODEL_PREFIX": {"input": $/Mtok, "output": $/Mtok,
  // "cache_read"?: $/Mtok, "cache_write"?: $/Mtok}, ...}. Throws std::invalid_argument naming the
  // key when an entry is not of that shape or a rate is negative.
  void merge(const json& table);
  void set(const std::string& model_prefix, Price price) { prices_[model_prefix] = price; }
  // The longest configured prefix of `model` (or of the part after the last '/', for
  // OpenRouter-style "vendor/model" names), else the model table's price for it (find_model).
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
