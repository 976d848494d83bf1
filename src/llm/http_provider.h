// HttpProvider: a Provider that speaks one WireFormat over HTTP, with timeouts (per attempt and for
// the whole call), retries (exponential backoff with jitter, honouring Retry-After on 429/5xx),
// cancellation, typed errors, reply checks, usage checks and cost.
#pragma once

#include <memory>
#include <string>

#include "llm/pricing.h"
#include "llm/provider.h"
#include "llm/wire_format.h"

namespace marathon::llm {

class HttpProvider : public Provider {
 public:
  // `config.base_url` and `config.api_key_env` must be filled in (the registry does it). The key is
  // read from the environment once, here, and is never logged.
  HttpProvider(std::string name, ProviderConfig config, std::unique_ptr<WireFormat> format);
  std::string name() const override { return name_; }
  const ProviderConfig& config() const override { return config_; }
  ChatResult chat(const ChatRequest& request) override;
  std::string url() const;

 private:
  std::string name_;
  ProviderConfig config_;
  std::unique_ptr<WireFormat> format_;
  std::string api_key_;
  PriceTable prices_;
};

// The fallback UsageEstimator: 4 bytes of JSON per token, prompt and reply (pure).
Usage rough_usage_estimate(const ChatRequest& request, const json& reply_message);

}  // namespace marathon::llm
