// LlmPolicy: the `llm` policy. Sends the assembled prompt to a Provider and hands back its reply in
// PolicyReply form; failures and malformed parts are carried as values for the loop to handle.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "llm/provider.h"
#include "policy/policy.h"

namespace marathon {

class LlmPolicy : public Policy {
 public:
  static constexpr int kDefaultMaxOutputTokens = 8192;
  struct Options {
    // The reply's token limit when nothing smaller is needed: each request asks for
    // min(max_tokens, what the window leaves after the prompt); see output_token_limit.
    int max_tokens = kDefaultMaxOutputTokens;
    std::optional<double> temperature;  // --temperature; unset: none is sent
    int64_t context_window = 0;         // tokens; 0: unknown (max_tokens as is)
    bool max_tokens_fixed = false;      // --max-output-tokens: max_tokens as given, never shrunk
    bool stream = false;                // server-sent events
    std::string reasoning_effort;       // OpenAI reasoning models ("" : not sent)
    int64_t thinking_budget = 0;        // Anthropic extended thinking (0: off)
  };
  LlmPolicy(std::unique_ptr<llm::Provider> provider, Options options);
  explicit LlmPolicy(std::unique_ptr<llm::Provider> provider)
      : LlmPolicy(std::move(provider), Options{}) {}
  std::string name() const override { return "llm"; }
  PolicyReply next(const PolicyRequest& request) override;
  llm::Provider& provider() { return *provider_; }

 private:
  std::unique_ptr<llm::Provider> provider_;
  Options options_;
};

// The reply's token limit for a prompt of `prompt_tokens` (estimate) in a `context_window`:
// `max_tokens`, or less when the window leaves less (window - prompt - 2% of the window for the
// estimate's error), but never under kMinOutputTokens. A fixed limit or an unknown window
// (0) gives max_tokens. Pure.
inline constexpr int kMinOutputTokens = 256;
int output_token_limit(int max_tokens, int64_t context_window, int64_t prompt_tokens, bool fixed);

// ChatResult -> PolicyReply (pure; exposed for tests).
PolicyReply to_policy_reply(const llm::ChatResult& result, const std::string& provider,
                            const std::string& model);

}  // namespace marathon
