#include "policy/llm_policy.h"

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

PolicyReply LlmPolicy::next(const PolicyRequest& request) {
  llm::ChatRequest chat;
  chat.model = provider_->config().model;
  chat.messages = request.messages;
  chat.tools = request.tools;
  chat.max_tokens = options_.max_tokens;
  chat.temperature = options_.temperature;
  chat.cancel = request.interrupted;
  return to_policy_reply(provider_->chat(chat), provider_->name(), chat.model);
}

}  // namespace marathon
