// LlmPolicy: the `llm` policy. Sends the assembled prompt to a Provider and hands back its reply in
// PolicyReply form; failures and malformed parts are carried as values for the loop to handle.
#pragma once

#include <memory>

#include "llm/provider.h"
#include "policy/policy.h"

namespace marathon {

class LlmPolicy : public Policy {
 public:
  struct Options {
    int max_tokens = 8192;
    double temperature = 0.2;
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

// ChatResult -> PolicyReply (pure; exposed for tests).
PolicyReply to_policy_reply(const llm::ChatResult& result, const std::string& provider,
                            const std::string& model);

}  // namespace marathon
