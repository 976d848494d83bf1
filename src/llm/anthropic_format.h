// The Anthropic messages wire format. Canonical (OpenAI-style) messages are translated to content
// blocks: system messages become the top-level `system`, assistant tool_calls become `tool_use`
// blocks, and consecutive `tool` messages become one user turn of `tool_result` blocks. Replies go
// the other way: text blocks joined into `content`, tool_use blocks into `tool_calls`.
#pragma once

#include "llm/wire_format.h"

namespace marathon::llm {

class AnthropicFormat : public WireFormat {
 public:
  std::string path() const override { return "/messages"; }
  // BASE/v1/messages, or BASE/messages where BASE already ends in /v1.
  std::string endpoint(const std::string& base_url) const override;
  std::map<std::string, std::string> headers(const std::string& api_key) const override;
  json request_body(const ChatRequest& request) const override;
  ParsedReply parse_reply(const json& body) const override;
  std::unique_ptr<StreamAssembler> stream_assembler() const override;
};

// Canonical messages -> Anthropic `messages`; system text is returned through `system`. The last
// block of each canonical message whose index is in `breakpoints` gets
// `cache_control: {type: ephemeral}` (at most the last kMaxCacheBreakpoints of them); a breakpoint
// on a system message sets `*system_breakpoint` instead (the system prompt carries it). A final
// assistant turn ends without trailing whitespace, as the API requires of it.
inline constexpr size_t kMaxCacheBreakpoints = 4;  // Anthropic's limit per request
// With extended thinking, max_tokens covers the thinking budget and the answer: at least this much
// is left for the answer.
inline constexpr int64_t kMinAnswerTokens = 1024;
json to_anthropic_messages(const json& canonical, std::string* system,
                           const std::vector<int64_t>& breakpoints = {},
                           bool* system_breakpoint = nullptr);
// OpenAI tools array -> Anthropic tools ({name, description, input_schema}).
json to_anthropic_tools(const json& openai_tools);
// One Anthropic assistant content array -> canonical assistant message.
json assistant_from_anthropic(const json& content);

}  // namespace marathon::llm
