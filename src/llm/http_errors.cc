#include "llm/http_errors.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "core/event.h"
#include "core/json_reader.h"

namespace marathon::llm {

std::string error_body_message(const std::string& body) {
  json j = read_outside_json(body).value;  // discarded when not JSON, too deep or out of range
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_string()) return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      std::string msg = e["message"].get<std::string>();
      if (e.contains("type") && e["type"].is_string())
        msg += " (" + e["type"].get<std::string>() + ")";
      return msg;
    }
  }
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  constexpr size_t kMax = 500;
  return body.size() > kMax ? body.substr(0, kMax) + "..." : body;
}

bool mentions_context_length(const std::string& body) {
  std::string lower(body);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static constexpr std::array<const char*, 10> kPhrases = {
      "context_length_exceeded", "context length",       "context window",
      "maximum context",         "prompt is too long",   "too many tokens",
      "input is too long",       "maximum input length", "exceeds the limit of",
      "string_above_max_length"};
  for (const char* p : kPhrases) {
    if (lower.find(p) != std::string::npos) return true;
  }
  return false;
}

LlmError classify_http_error(int status, const std::string& body, const std::string& where,
                             const std::string& key_env, bool key_present) {
  LlmError e;
  e.http_status = status;
  std::string detail = error_body_message(body);
  std::string head = where + ": HTTP " + std::to_string(status) + ": " + detail;
  if (status == 401 || status == 403) {
    e.kind = ErrorKind::kAuth;
    e.message =
        head + (status == 401 ? " -- the API key was rejected" : " -- the key lacks access") +
        (key_present ? "; check the key in env " + key_env : "; env " + key_env + " is not set");
  } else if (status == 404) {
    e.kind = ErrorKind::kNotFound;
    e.message = head + " -- check the base URL and the model name";
  } else if ((status == 400 || status == 413 || status == 422) && mentions_context_length(body)) {
    e.kind = ErrorKind::kContextLength;
    e.message = head;
  } else if (status == 429) {
    e.kind = ErrorKind::kRateLimitedExhausted;
    e.message = head + " -- still rate limited after every retry";
  } else if (status >= 500 || status == 408 || status == 409 || status == 425) {
    e.kind = ErrorKind::kTransport;
    e.message = head + " -- server error after every retry";
  } else {
    e.kind = ErrorKind::kBadRequest;
    e.message = head;
  }
  return e;
}

}  // namespace marathon::llm
