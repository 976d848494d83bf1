#include "policy/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "context/context_config.h"
#include "context/token_estimate.h"
#include "llm/pricing.h"
#include "llm/provider_registry.h"
#include "policy/llm_policy.h"
#include "policy/replay_policy.h"
#include "policy/search_policy.h"

namespace marathon {

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> kNames = {"llm", "search", "replay"};
  return kNames;
}

namespace {

std::string names_text() {
  std::string s;
  for (const std::string& n : policy_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::unique_ptr<Policy> make_llm(const State& state) {
  const json& c = state.config;
  std::string spec = c.value("model", "");
  if (spec.empty()) {
    throw std::invalid_argument(
        "policy llm needs a model: --model PROVIDER:MODEL (or MARATHON_MODEL)");
  }
  llm::ModelSpec m = llm::parse_model_spec(spec);
  llm::ProviderConfig pc;
  pc.provider = m.provider;
  pc.model = m.model;
  pc.base_url = c.value("base_url", "");
  pc.api_key_env = c.value("api_key_env", "");
  // --model-timeout (run.created config, or the latest `resume --model-timeout`): one HTTP
  // attempt; the retries of one call share a bound of 600 s or two attempts, whichever is longer.
  pc.timeout_s = model_timeout_s(c);
  pc.total_timeout_s = std::max(600.0, 2 * pc.timeout_s);
  if (c.contains("model_total_timeout_s") && c["model_total_timeout_s"].is_number() &&
      c["model_total_timeout_s"].get<double>() > 0) {
    pc.total_timeout_s = c["model_total_timeout_s"].get<double>();
  }
  // Usage a provider did not report, or reported as nonsense, is replaced by the context
  // module's estimate of the prompt as sent and the reply as received.
  pc.estimate_usage = [](const llm::ChatRequest& request, const json& reply) {
    llm::Usage u;
    u.prompt_tokens = context::estimate_request_tokens(request.messages, request.tools);
    u.completion_tokens = context::estimate_message_tokens(reply);
    return u;
  };
  const json prices = state.task.value("prices", json::object());
  if (prices.is_object() && prices.contains(spec) && prices[spec].is_object()) {
    pc.price = llm::Price{prices[spec].value("prompt", 0.0), prices[spec].value("completion", 0.0)};
  }
  // --price-in / --price-out ({input, output} $/Mtok in the run's config): over every table.
  if (c.contains("price") && c["price"].is_object()) {
    pc.price = llm::price_from_json(c["price"], "price");
  }
  LlmPolicy::Options options;
  options.context_window = context::ContextConfig::from_run_config(c).context_window;
  // --max-output-tokens: the reply's limit as given; otherwise sized from the window per request.
  if (c.contains("max_output_tokens") && c["max_output_tokens"].is_number_integer()) {
    options.max_tokens = c["max_output_tokens"].get<int>();
    options.max_tokens_fixed = true;
  }
  options.stream = c.value("stream", false);
  options.reasoning_effort = c.value("reasoning_effort", "");
  options.thinking_budget = c.value("thinking_budget", int64_t{0});
  if (c.contains("temperature") && c["temperature"].is_number()) {
    options.temperature = c["temperature"].get<double>();
  }
  return std::make_unique<LlmPolicy>(llm::make_provider(pc), options);
}

}  // namespace

double model_timeout_s(const json& config) {
  if (config.is_object() && config.contains("model_timeout_s") &&
      config["model_timeout_s"].is_number()) {
    double t = config["model_timeout_s"].get<double>();
    if (t > 0 && std::isfinite(t)) return t;
  }
  return kDefaultModelTimeoutS;
}

std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyOptions& o) {
  if (name == "llm") {
    if (!o.state) throw std::invalid_argument("policy llm needs the run's state");
    return make_llm(*o.state);
  }
  if (name == "replay") {
    if (!o.replay_events) throw std::invalid_argument("policy replay needs a logged run to replay");
    return std::make_unique<ReplayPolicy>(*o.replay_events);
  }
  if (name == "search") {
    if (!o.state) throw std::invalid_argument("policy search needs the run's state");
    return make_search_policy(*o.state);
  }
  throw std::invalid_argument(
      fmt::format("unknown policy \"{}\"; the policies are: {}", name, names_text()));
}

}  // namespace marathon
