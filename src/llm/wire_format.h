// WireFormat: how one family of HTTP APIs spells a chat call (OpenAI chat completions, Anthropic
// messages). Pure translation between the canonical form and the wire; no I/O.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "llm/provider.h"
#include "llm/sse.h"

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

// Assembles a streamed reply (server-sent events, sse.h) into the body the same request would have
// had without streaming, so that parse_reply reads both the same way.
class StreamAssembler {
 public:
  virtual ~StreamAssembler() = default;
  // One event of the stream, in order. An event that is not what the format promises sets
  // `malformed`; an error event sets `error` (the body a non-streamed error reply carries, e.g.
  // {"type":"error","error":{"type":"overloaded_error",...}}) and `error_status` (the HTTP status
  // such a reply has: 529 overloaded, 429 rate limit, 500 server error, 400 otherwise).
  virtual void on_event(const SseEvent& e) = 0;
  // The body assembled so far (complete once `done`).
  virtual json body() const = 0;
  bool done = false;  // the stream's end marker arrived ([DONE], message_stop)
  std::string malformed;
  json error;
  int error_status = 0;
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  virtual std::string path() const = 0;  // appended to the base URL, e.g. "/chat/completions"
  // The URL a call goes to, from a base URL without a trailing slash: base_url + path() unless the
  // format knows better.
  virtual std::string endpoint(const std::string& base_url) const { return base_url + path(); }
  // Authentication and version headers; `api_key` may be empty (local servers).
  virtual std::map<std::string, std::string> headers(const std::string& api_key) const = 0;
  virtual json request_body(const ChatRequest& request) const = 0;
  virtual ParsedReply parse_reply(const json& body) const = 0;
  // A fresh assembler for one streamed reply (ChatRequest::stream).
  virtual std::unique_ptr<StreamAssembler> stream_assembler() const = 0;
};

// The HTTP status an error reply of this provider `type` ("overloaded_error", "rate_limit_error",
// "api_error", ...) stands for, so that a streamed error is retried and classified as the same
// error sent as a status would be.
int status_of_error_type(const std::string& type);

}  // namespace marathon::llm
