// Turns a failed HTTP exchange into a typed LlmError with a message that says what to fix.
#pragma once

#include <string>

#include "llm/provider.h"

namespace marathon::llm {

// The human-readable message inside an OpenAI ({"error":{"message"}}) or Anthropic
// ({"type":"error","error":{"type","message"}}) error body; else the body itself, shortened.
std::string error_body_message(const std::string& body);

// True when a 400/413 body says the prompt is longer than the model's context window.
bool mentions_context_length(const std::string& body);

// Classifies a non-2xx response. `where` names provider and URL; `key_env` the env var of the key
// (named in auth errors so the user knows what to set; the key itself is never included).
LlmError classify_http_error(int status, const std::string& body, const std::string& where,
                             const std::string& key_env, bool key_present);

}  // namespace marathon::llm
