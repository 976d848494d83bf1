// Providers by name. Every OpenAI-compatible server is the "openai" wire format with its own
// default base URL and key variable; "anthropic" is the messages API.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "llm/provider.h"

namespace marathon::llm {

struct ProviderInfo {
  std::string name;
  std::string wire;  // "openai" | "anthropic"
  std::string default_base_url;
  std::string default_key_env;  // empty: no key expected (local servers)
};

const std::vector<ProviderInfo>& known_providers();
std::string provider_names();  // "anthropic, llamacpp, ..." for error messages
const ProviderInfo* find_provider(const std::string& name);

struct ModelSpec {
  std::string provider;
  std::string model;
};

// "PROVIDER:MODEL", split at the first ':' (so "ollama:llama3:8b" is ollama's "llama3:8b").
// Throws std::invalid_argument saying what is wrong and listing the providers.
ModelSpec parse_model_spec(const std::string& spec);

// A ProviderConfig from a config table, e.g. the [llm] table of a run config:
//   {"model": "openai:gpt-4o", "base_url": "...", "api_key_env": "...", "timeout_s": 120,
//    "connect_timeout_s": 20, "total_timeout_s": 600, "max_retries": 6, "backoff_base_s": 1,
//    "backoff_max_s": 60, "price": {"input": 2.5, "output": 10, "cache_read"?, "cache_write"?},
//    "prices": {"MODEL_PREFIX": {"input", "output", ...}}}
// Timeouts must be positive (0 would mean "no limit" to libcurl).
// Throws std::invalid_argument naming the key ("llm.timeout_s: expected a number").
ProviderConfig provider_config_from_json(const json& table, const std::string& where = "llm");

// Whether two base URLs name the same endpoint: trailing slashes dropped, scheme and host compared
// without case.
bool same_base_url(const std::string& a, const std::string& b);

// Fills base_url / api_key_env defaults from the registry and builds the provider. Throws
// std::invalid_argument for an unknown provider (listing the valid names) or an empty model.
std::unique_ptr<Provider> make_provider(ProviderConfig config);

}  // namespace marathon::llm
