// The OpenAI chat-completions wire format (also spoken by vLLM, SGLang, llama.cpp's server, Ollama
// and OpenRouter). Canonical messages are already in this format; replies are normalised (arguments
// always a string, content always a string, missing call ids filled in).
#pragma once

#include "llm/wire_format.h"

namespace marathon::llm {

class OpenAiFormat : public WireFormat {
 public:
  // OpenAI's own API wants `max_completion_tokens` (reasoning models reject `max_tokens`); most
  // compatible servers only know `max_tokens`. A reasoning model of the model table gets
  // `max_completion_tokens` either way.
  explicit OpenAiFormat(bool max_completion_tokens = false)
      : max_completion_tokens_(max_completion_tokens) {}
  std::string path() const override { return "/chat/completions"; }
  std::map<std::string, std::string> headers(const std::string& api_key) const override;
  json request_body(const ChatRequest& request) const override;
  ParsedReply parse_reply(const json& body) const override;
  std::unique_ptr<StreamAssembler> stream_assembler() const override;

 private:
  bool max_completion_tokens_;
};

// Text of a `content` that may be a string, null, or an array of {type:"text", text} parts.
std::string content_text(const json& content);

}  // namespace marathon::llm
