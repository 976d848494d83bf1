// The models marathon knows by name: what each family takes (the token-limit field, sampling
// parameters, reasoning_effort values, extended-thinking budgets), its context window and output
// limit, and its list price. One table (model_table.cc), with the date it was checked and its
// sources (kModelTableDate, kModelTableSources; docs/providers.md).
//
// A name is found by exact match (a family's name or one of its aliases), then by the
// dated-snapshot rule: NAME-YYYY-MM-DD or NAME-YYYYMMDD is NAME's family. An OpenRouter-style
// "vendor/model" is looked up by the part after the last '/'. Nothing else matches: "gpt-5.2" is
// not "gpt-5", and a model the table does not list has no capabilities and no price guessed for it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "llm/provider.h"

namespace marathon::llm {

inline constexpr const char* kModelTableDate = "2026-12-06";
inline constexpr const char* kModelTableSources =
    "openai.com/api/pricing and platform.openai.com/docs/models (OpenAI), "
    "docs.anthropic.com/en/docs/about-claude/pricing and .../models/overview (Anthropic), "
    "cross-checked against the request types of the official SDKs openai 3.63.0 and anthropic "
    "2.17.0";

struct ModelInfo {
  std::string family;                // e.g. "gpt-5", "claude-sonnet-4-5"
  std::vector<std::string> aliases;  // other exact names of the same family
  std::string vendor;                // "openai" | "anthropic"
  // OpenAI: a reasoning model (o-series, gpt-5): the token limit is max_completion_tokens (OpenAI
  // answers 400 to max_tokens) and it takes no sampling parameters. Anthropic: extended thinking.
  bool reasoning = false;
  bool max_completion_tokens = false;  // OpenAI: the limit must be spelled max_completion_tokens
  bool sampling = true;                // takes temperature (and top_p)
  // The reasoning_effort values the model takes (OpenAI); empty: it takes none.
  std::vector<std::string> reasoning_efforts;
  bool thinking = false;       // Anthropic: thinking {type: enabled, budget_tokens}
  int64_t context_window = 0;  // tokens
  int64_t max_output_tokens = 0;
  // USD per million tokens. OpenAI: cache_read is its cached-input rate (no cache writes);
  // Anthropic: cache reads 0.1x, 5-minute cache writes 1.25x the input rate. nullopt: not known.
  std::optional<Price> price;
};

// Every entry, in table order.
const std::vector<ModelInfo>& model_table();

// The family of `model` (exact name or alias, then the dated-snapshot rule, then the part after
// the last '/'), or nullptr when the table does not list it.
const ModelInfo* find_model(const std::string& model);

// `model` without a trailing -YYYY-MM-DD or -YYYYMMDD (unchanged when it has none).
std::string strip_snapshot_date(const std::string& model);

// What a request asks for that `model` does not take, one line each (e.g. "--temperature 0.7:
// o3 is a reasoning model and takes no sampling parameters; not sent"): the wire formats leave
// those parameters out. Empty for a model the table does not list (everything goes as asked) and
// for `wire` "openai" / "anthropic" parameters of the other wire (never sent by it).
struct AskedParameters {
  std::optional<double> temperature;
  std::string reasoning_effort;
  int64_t thinking_budget = 0;
};
std::vector<std::string> unsent_parameters(const std::string& wire, const std::string& model,
                                           const AskedParameters& asked);

// Whether `info` (nullptr: unknown) takes the parameter: an unknown model takes what is asked.
bool takes_temperature(const ModelInfo* info);
bool takes_reasoning_effort(const ModelInfo* info, const std::string& effort);
bool takes_thinking(const ModelInfo* info);

}  // namespace marathon::llm
