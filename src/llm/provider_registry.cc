#include "llm/provider_registry.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>

#include "llm/anthropic_format.h"
#include "llm/http_provider.h"
#include "llm/openai_format.h"
#include "llm/pricing.h"

namespace marathon::llm {

const std::vector<ProviderInfo>& known_providers() {
  static const std::vector<ProviderInfo> kProviders = {
      {"anthropic", "anthropic", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"},
      {"llamacpp", "openai", "http://127.0.0.1:8080/v1", ""},
      {"ollama", "openai", "http://127.0.0.1:11434/v1", ""},
      {"openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY"},
      {"openrouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"},
      {"sglang", "openai", "http://127.0.0.1:30000/v1", ""},
      {"vllm", "openai", "http://127.0.0.1:8000/v1", ""},
  };
  return kProviders;
}

std::string provider_names() {
  std::string out;
  for (const auto& p : known_providers()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

const ProviderInfo* find_provider(const std::string& name) {
  for (const auto& p : known_providers()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

ModelSpec parse_model_spec(const std::string& spec) {
  auto colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
    throw std::invalid_argument(
        "--model '" + spec +
        "': expected PROVIDER:MODEL, e.g. openai:gpt-4o; providers: " + provider_names());
  }
  ModelSpec m{spec.substr(0, colon), spec.substr(colon + 1)};
  if (!find_provider(m.provider)) {
    throw std::invalid_argument("--model '" + spec + "': unknown provider '" + m.provider +
                                "'; valid providers: " + provider_names());
  }
  return m;
}

ProviderConfig provider_config_from_json(const json& t, const std::string& where) {
  if (!t.is_object()) throw std::invalid_argument(where + ": expected a table");
  ProviderConfig c;
  auto str = [&](const char* key, std::string& out) {
    if (!t.contains(key)) return;
    if (!t[key].is_string()) throw std::invalid_argument(where + "." + key + ": expected a string");
    out = t[key].get<std::string>();
  };
  auto num = [&](const char* key, double& out) {
    if (!t.contains(key)) return;
    if (!t[key].is_number() || t[key].get<double>() < 0) {
      throw std::invalid_argument(where + "." + key + ": expected a non-negative number");
    }
    out = t[key].get<double>();
  };
  auto positive = [&](const char* key, double& out) {
    if (!t.contains(key)) return;
    if (!t[key].is_number() || !(t[key].get<double>() > 0) ||
        !std::isfinite(t[key].get<double>())) {
      throw std::invalid_argument(where + "." + key + ": expected a positive number of seconds");
    }
    out = t[key].get<double>();
  };
  std::string model;
  str("model", model);
  if (!model.empty()) {
    ModelSpec spec = parse_model_spec(model);
    c.provider = spec.provider;
    c.model = spec.model;
  }
  str("base_url", c.base_url);
  str("api_key_env", c.api_key_env);
  positive("timeout_s", c.timeout_s);
  positive("connect_timeout_s", c.connect_timeout_s);
  positive("total_timeout_s", c.total_timeout_s);
  num("backoff_base_s", c.backoff_base_s);
  num("backoff_max_s", c.backoff_max_s);
  num("retry_after_max_s", c.retry_after_max_s);
  double retries = c.max_retries;
  num("max_retries", retries);
  c.max_retries = static_cast<int>(retries);
  if (t.contains("price")) c.price = price_from_json(t["price"], where + ".price");
  if (t.contains("prices")) {
    if (!t["prices"].is_object()) throw std::invalid_argument(where + ".prices: expected a table");
    for (const auto& [k, v] : t["prices"].items()) {
      c.prices[k] = price_from_json(v, where + ".prices." + k);
    }
  }
  return c;
}

bool same_base_url(const std::string& a, const std::string& b) {
  auto norm = [](std::string u) {
    while (!u.empty() && u.back() == '/') u.pop_back();
    // Scheme and host are case-insensitive; the path is not.
    const size_t scheme_end = u.find("://");
    const size_t host_end =
        scheme_end == std::string::npos ? std::string::npos : u.find('/', scheme_end + 3);
    const size_t n = host_end == std::string::npos ? u.size() : host_end;
    for (size_t i = 0; i < n; ++i)
      u[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(u[i])));
    return u;
  };
  return norm(a) == norm(b);
}

std::unique_ptr<Provider> make_provider(ProviderConfig config) {
  const ProviderInfo* info = find_provider(config.provider);
  if (!info) {
    throw std::invalid_argument("unknown LLM provider '" + config.provider +
                                "'; valid providers: " + provider_names());
  }
  if (config.model.empty()) {
    throw std::invalid_argument("provider '" + config.provider + "': no model given");
  }
  if (config.base_url.empty()) config.base_url = info->default_base_url;
  if (config.api_key_env.empty()) config.api_key_env = info->default_key_env;
  const char* key = config.api_key_env.empty() ? nullptr : std::getenv(config.api_key_env.c_str());
  if (!config.api_key_env.empty() && (key == nullptr || *key == '\0')) {  // empty: as unset
    // Once per process and variable: a run makes its provider more than once (the preflight's
    // policy, then the run's), and one warning says it.
    static std::mutex warned_mutex;
    static std::set<std::string> warned;
    std::lock_guard<std::mutex> lock(warned_mutex);
    if (warned.insert(config.provider + "\n" + config.api_key_env).second) {
      spdlog::warn("{}: env {} is not set; requests go without a key", config.provider,
                   config.api_key_env);
    }
  }
  std::unique_ptr<WireFormat> format;
  if (info->wire == "anthropic") {
    format = std::make_unique<AnthropicFormat>();
    // Prices given without cache rates get Anthropic's (cache reads 0.1x, writes 1.25x input).
    if (config.price) config.price = anthropic_cache_rates(*config.price);
    for (auto& [prefix, p] : config.prices) p = anthropic_cache_rates(p);
  } else {
    // OpenAI's own API (its URL however spelled: a trailing slash, a scheme or host in capitals)
    // takes max_completion_tokens for every model; reasoning models get it at any URL
    // (OpenAiFormat::request_body).
    format = std::make_unique<OpenAiFormat>(
        /*max_completion_tokens=*/info->name == "openai" &&
        same_base_url(config.base_url, info->default_base_url));
  }
  std::string name = info->name;
  return std::make_unique<HttpProvider>(name, std::move(config), std::move(format));
}

}  // namespace marathon::llm
