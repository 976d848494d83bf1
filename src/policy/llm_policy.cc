#include "policy/llm_policy.h"

#include <algorithm>

namespace marathon {

LlmPolicy::LlmPolicy(std::unique_ptr<llm::Provider> provider, Options options)
    : provider_(std::move(provider)), options_(options) {}

PolicyReply to_policy_reply(const llm::ChatResult& result, const std::string& provider,
                            const std::string& model) {
  PolicyReply reply;
  reply.provider = provider;
  reply.model = model;
  reply.message = result.message;
  reply.prompt_tokens = result.usage.prompt_tokens;
  reply.completion_tokens = result.usage.completion_tokens;
  reply.cache_read_tokens = result.usage.cache_read_tokens;
  reply.cache_write_tokens = result.usage.cache_write_tokens;
  reply.cost_usd = result.cost_usd;
  reply.finish_reason = result.finish_reason;
  if (result.error) {
    events::ModelError error = events::ModelError::make(result.error->kind, result.error->message);
    error.http_status = result.error->http_status;
    error.attempts = result.attempts;
    reply.error = std::move(error);
  }
  if (result.usage_estimated) {
    events::LlmUsageRejected& w = reply.usage_rejected.emplace();
    w.problems = result.usage_problems;
    w.reported = result.usage_reported;
    w.estimated = {result.usage.prompt_tokens, result.usage.completion_tokens};
  }
  for (const auto& p : result.problems) {
    reply.problems.push_back(
        {{"tool_call_id", p.tool_call_id}, {"kind", p.kind}, {"message", p.message}});
  }
  return reply;
}

int output_token_limit(int max_tokens, int64_t context_window, int64_t prompt_tokens, bool fixed) {
  if (fixed || context_window <= 0) return max_tokens;
  const int64_t margin = std::max<int64_t>(64, context_window / 50);
  const int64_t room = context_window - std::max<int64_t>(0, prompt_tokens) - margin;
  return static_cast<int>(std::max<int64_t>(kMinOutputTokens, std::min<int64_t>(max_tokens, room)));
}

PolicyReply LlmPolicy::next(const PolicyRequest& request) {
  llm::ChatRequest chat;
  chat.model = provider_->config().model;
  chat.messages = request.messages;
  chat.tools = request.tools;
  // A request without an estimate (a summariser call) is sized by its bytes (4 per token).
  const int64_t prompt_tokens =
      request.tokens_estimate > 0
          ? request.tokens_estimate
          : static_cast<int64_t>(request.messages.dump().size() + request.tools.dump().size()) / 4;
  chat.max_tokens = output_token_limit(options_.max_tokens, options_.context_window, prompt_tokens,
                                       options_.max_tokens_fixed);
  chat.stream = options_.stream;
  chat.reasoning_effort = options_.reasoning_effort;
  chat.thinking_budget = options_.thinking_budget;
  chat.temperature = options_.temperature;
  chat.cancel = request.interrupted;
  chat.time_left_s = request.time_left_s;
  chat.cache_breakpoints = request.cache_breakpoints;
  return to_policy_reply(provider_->chat(chat), provider_->name(), chat.model);
}

}  // namespace marathon
