#include "llm/model_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "llm/pricing.h"

namespace marathon::llm {

namespace {

// Checked 2026-12-06 (kModelTableDate) against the vendors' pricing and model pages
// (kModelTableSources). Prices are the standard tier's list prices in USD per million tokens:
// input, output, cached input (OpenAI) / cache reads and 5-minute cache writes (Anthropic, 0.1x and
// 1.25x input). A model whose price was not certain on that date is not listed, so that it is never
// priced by a guess; docs/providers.md says how to price one (--price-in/--price-out, [prices]).
const std::vector<std::string> kEffortsO = {"low", "medium", "high"};
const std::vector<std::string> kEfforts5 = {"minimal", "low", "medium", "high"};
const std::vector<std::string> kEfforts51 = {"none", "low", "medium", "high"};

ModelInfo openai_chat(std::string family, Price price, int64_t window, int64_t out,
                      std::vector<std::string> aliases = {}) {
  ModelInfo m;
  m.family = std::move(family);
  m.aliases = std::move(aliases);
  m.vendor = "openai";
  m.context_window = window;
  m.max_output_tokens = out;
  m.price = price;
  return m;
}

ModelInfo openai_reasoning(std::string family, std::vector<std::string> efforts,
                           std::optional<Price> price, int64_t window, int64_t out) {
  ModelInfo m = openai_chat(std::move(family), Price{}, window, out);
  m.reasoning = true;
  m.max_completion_tokens = true;
  m.sampling = false;
  m.reasoning_efforts = std::move(efforts);
  m.price = price;
  return m;
}

ModelInfo claude(std::string family, bool thinking, double in, double out, int64_t max_output,
                 std::vector<std::string> aliases = {}) {
  ModelInfo m;
  m.family = std::move(family);
  m.aliases = std::move(aliases);
  m.vendor = "anthropic";
  m.reasoning = thinking;
  m.thinking = thinking;
  m.context_window = 200'000;
  m.max_output_tokens = max_output;
  m.price = anthropic_cache_rates(Price{in, out});
  return m;
}

const std::vector<ModelInfo>& table() {
  static const std::vector<ModelInfo> kTable = {
      // OpenAI, chat models: sampling parameters, no reasoning_effort.
      openai_chat("gpt-4o", {2.50, 10.00, 1.25}, 128'000, 16'384),
      openai_chat("gpt-4o-2024-05-13", {5.00, 15.00}, 128'000, 4'096),
      openai_chat("gpt-4o-mini", {0.15, 0.60, 0.075}, 128'000, 16'384),
      openai_chat("gpt-4.1", {2.00, 8.00, 0.50}, 1'047'576, 32'768),
      openai_chat("gpt-4.1-mini", {0.40, 1.60, 0.10}, 1'047'576, 32'768),
      openai_chat("gpt-4.1-nano", {0.10, 0.40, 0.025}, 1'047'576, 32'768),
      // OpenAI, reasoning models: max_completion_tokens, no sampling parameters.
      openai_reasoning("o1", kEffortsO, Price{15.00, 60.00, 7.50}, 200'000, 100'000),
      openai_reasoning("o1-mini", {}, Price{1.10, 4.40, 0.55}, 128'000, 65'536),
      openai_reasoning("o1-pro", kEffortsO, Price{150.00, 600.00}, 200'000, 100'000),
      openai_reasoning("o3", kEffortsO, Price{2.00, 8.00, 0.50}, 200'000, 100'000),
      openai_reasoning("o3-mini", kEffortsO, Price{1.10, 4.40, 0.55}, 200'000, 100'000),
      openai_reasoning("o3-pro", kEffortsO, Price{20.00, 80.00}, 200'000, 100'000),
      openai_reasoning("o4-mini", kEffortsO, Price{1.10, 4.40, 0.275}, 200'000, 100'000),
      openai_reasoning("gpt-5", kEfforts5, Price{1.25, 10.00, 0.125}, 400'000, 128'000),
      openai_reasoning("gpt-5-mini", kEfforts5, Price{0.25, 2.00, 0.025}, 400'000, 128'000),
      openai_reasoning("gpt-5-nano", kEfforts5, Price{0.05, 0.40, 0.005}, 400'000, 128'000),
      openai_reasoning("gpt-5-pro", {"high"}, Price{15.00, 120.00}, 400'000, 272'000),
      openai_reasoning("gpt-5.1", kEfforts51, Price{1.25, 10.00, 0.125}, 400'000, 128'000),
      // Anthropic: max_tokens, temperature when asked for, extended thinking where marked.
      claude("claude-opus-4-5", true, 5.00, 25.00, 64'000),
      claude("claude-opus-4-1", true, 15.00, 75.00, 32'000),
      claude("claude-opus-4", true, 15.00, 75.00, 32'000, {"claude-opus-4-0"}),
      claude("claude-sonnet-4-5", true, 3.00, 15.00, 64'000),
      claude("claude-sonnet-4", true, 3.00, 15.00, 64'000, {"claude-sonnet-4-0"}),
      claude("claude-3-7-sonnet", true, 3.00, 15.00, 64'000, {"claude-3-7-sonnet-latest"}),
      claude("claude-haiku-4-5", true, 1.00, 5.00, 64'000),
      claude("claude-3-5-haiku", false, 0.80, 4.00, 8'192, {"claude-3-5-haiku-latest"}),
      claude("claude-3-haiku", false, 0.25, 1.25, 4'096),
  };
  return kTable;
}

bool all_digits(const std::string& s, size_t from, size_t n) {
  if (from + n > s.size()) return false;
  return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(from),
                     s.begin() + static_cast<std::ptrdiff_t>(from + n),
                     [](unsigned char c) { return std::isdigit(c) != 0; });
}

const ModelInfo* exact(const std::string& name) {
  for (const ModelInfo& m : table()) {
    if (m.family == name) return &m;
    if (std::find(m.aliases.begin(), m.aliases.end(), name) != m.aliases.end()) return &m;
  }
  return nullptr;
}

const ModelInfo* exact_or_snapshot(const std::string& name) {
  if (const ModelInfo* m = exact(name)) return m;
  const std::string family = strip_snapshot_date(name);
  return family == name ? nullptr : exact(family);
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  }
  return out;
}

}  // namespace

const std::vector<ModelInfo>& model_table() { return table(); }

std::string strip_snapshot_date(const std::string& model) {
  // -YYYY-MM-DD: 11 characters; -YYYYMMDD: 9.
  const size_t n = model.size();
  if (n > 11 && model[n - 11] == '-' && all_digits(model, n - 10, 4) && model[n - 6] == '-' &&
      all_digits(model, n - 5, 2) && model[n - 3] == '-' && all_digits(model, n - 2, 2)) {
    return model.substr(0, n - 11);
  }
  if (n > 9 && model[n - 9] == '-' && all_digits(model, n - 8, 8)) return model.substr(0, n - 9);
  return model;
}

const ModelInfo* find_model(const std::string& model) {
  if (const ModelInfo* m = exact_or_snapshot(model)) return m;
  const size_t slash = model.rfind('/');
  if (slash != std::string::npos && slash + 1 < model.size()) {
    return exact_or_snapshot(model.substr(slash + 1));
  }
  return nullptr;
}

bool takes_temperature(const ModelInfo* info) { return info == nullptr || info->sampling; }

bool takes_reasoning_effort(const ModelInfo* info, const std::string& effort) {
  if (info == nullptr) return true;
  const auto& e = info->reasoning_efforts;
  return std::find(e.begin(), e.end(), effort) != e.end();
}

bool takes_thinking(const ModelInfo* info) { return info == nullptr || info->thinking; }

std::vector<std::string> unsent_parameters(const std::string& wire, const std::string& model,
                                           const AskedParameters& asked) {
  std::vector<std::string> out;
  const ModelInfo* info = find_model(model);
  if (asked.temperature && !takes_temperature(info)) {
    out.push_back(fmt::format("--temperature {:g}: {} takes no sampling parameters ({}); not sent",
                              *asked.temperature, model,
                              info->reasoning ? "a reasoning model" : "the model table says so"));
  }
  if (!asked.reasoning_effort.empty()) {
    if (wire != "openai") {
      out.push_back(fmt::format(
          "--reasoning-effort {}: OpenAI-format models only (Anthropic: --thinking-budget); not "
          "sent",
          asked.reasoning_effort));
    } else if (!takes_reasoning_effort(info, asked.reasoning_effort)) {
      out.push_back(
          info->reasoning_efforts.empty()
              ? fmt::format("--reasoning-effort {}: {} takes no reasoning_effort; not sent",
                            asked.reasoning_effort, model)
              : fmt::format("--reasoning-effort {}: {} takes {}; not sent", asked.reasoning_effort,
                            model, join(info->reasoning_efforts)));
    }
  }
  if (asked.thinking_budget > 0) {
    if (wire != "anthropic") {
      out.push_back(fmt::format(
          "--thinking-budget {}: Anthropic models only (OpenAI: --reasoning-effort); not sent",
          asked.thinking_budget));
    } else if (!takes_thinking(info)) {
      out.push_back(fmt::format("--thinking-budget {}: {} has no extended thinking; not sent",
                                asked.thinking_budget, model));
    }
  }
  return out;
}

}  // namespace marathon::llm
