// WireFormat: how one family of HTTP APIs spells a chat call (OpenAI chat completions, Anthropic
// messages). Pure translation between the canonical form and the wire; no I/O.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "llm/provider.h"

namespace marathon::llm {

// A 2xx body turned back into canonical form. `malformed` non-empty: the body is not what the
// format promises (says what is missing or wrong); the other fields are then unusable.
// `usage_problems` non-empty: the reply's usage is missing or not believable (usage_check.h) and
// `usage` must not be used; `usage_reported` is the usage object as sent (null when absent).
struct ParsedReply {
  json message = json::object();
  Usage usage;
  std::vector<std::string> usage_problems;
  json usage_reported;
  std::string finish_reason;
  std::string malformed;
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  virtual std::string path() const = 0;  // appended to the base URL, e.g. "/chat/completions"
  // Authentication and version headers; `api_key` may be empty (local servers).
  virtual std::map<std::string, std::string> headers(const std::string& api_key) const = 0;
  virtual json request_body(const ChatRequest& request) const = 0;
  virtual ParsedReply parse_reply(const json& body) const = 0;
};

}  // namespace marathon::llm
