// Provider: one chat call to an LLM over HTTP. Messages and tools use marathon's canonical form
// (the OpenAI chat format, see policy/policy.h); each provider translates to and from its wire
// format. A call never throws for anything the network or the model does: failures come back as a
// typed LlmError, and a reply whose tool calls cannot be acted on comes back with `problems`
// flagged.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/events.h"

namespace marathon::llm {

// Why a call failed: the kinds (and their names in the log) are core's (core/events.h), so the
// loop and every reader of model.response agree on them.
using ErrorKind = LlmErrorKind;
using marathon::to_string;

struct LlmError {
  ErrorKind kind = ErrorKind::kTransport;
  std::string message;  // what happened and where (provider, URL, status); never the key
  int http_status = 0;  // 0 when no HTTP response arrived
};

// A part of a reply the loop must not act on as-is: it logs it and answers the model with
// `message`.
struct ReplyProblem {
  std::string tool_call_id;
  std::string kind;  // "bad_arguments" | "unknown_tool" | "missing_name"
  std::string message;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

struct ChatRequest {
  std::string model;
  json messages = json::array();  // canonical form
  json tools = json::array();     // OpenAI tools array
  int max_tokens = 4096;
  double temperature = 0.2;
};

struct ChatResult {
  json message = json::object();  // assistant message, canonical form
  Usage usage;
  double cost_usd = 0;
  std::string finish_reason;  // "stop" | "tool_calls" | "length" | provider's own word
  std::vector<ReplyProblem> problems;
  std::optional<LlmError> error;  // set: message/usage are empty
  int attempts = 0;               // HTTP attempts made (1 + retries)
  bool ok() const { return !error.has_value(); }
};

// Dollars per million tokens.
struct Price {
  double input_per_mtok = 0;
  double output_per_mtok = 0;
};

struct ProviderConfig {
  std::string provider;  // registry name: "openai", "anthropic", "vllm", ...
  std::string model;
  std::string base_url;  // empty: the provider's default
  std::string
      api_key_env;         // empty: the provider's default (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)
  double timeout_s = 600;  // whole request
  double connect_timeout_s = 20;
  int max_retries = 6;  // on 429, 5xx and transport errors
  double backoff_base_s = 1.0;
  double backoff_max_s = 60.0;
  double retry_after_max_s = 300;       // a longer Retry-After is clamped to this
  std::optional<Price> price;           // this model's price, over any table
  std::map<std::string, Price> prices;  // by model-name prefix, over the built-in table
  std::map<std::string, std::string> extra_headers;
  // How to wait between retries; tests inject a recorder. Default: std::this_thread::sleep_for.
  std::function<void(std::chrono::milliseconds)> sleep;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string name() const = 0;  // registry name
  virtual const ProviderConfig& config() const = 0;
  virtual ChatResult chat(const ChatRequest& request) = 0;
};

}  // namespace marathon::llm
