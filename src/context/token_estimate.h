// Token estimates without a tokenizer, calibrated against the usage the provider reported.
//
// The raw estimate counts character classes the way BPE vocabularies split text: a word costs about
// one token per 4 letters, a run of digits one per 3, punctuation about one per character, a run of
// spaces one, a non-ASCII code point one. It is deliberately a little pessimistic for code and
// JSON. The calibration ratio that multiplies it is fitted from the log (core/token_fit.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/event.h"

namespace marathon::context {

// Raw estimate of the tokens in a piece of text.
int64_t estimate_text_tokens(std::string_view text);

// Raw estimate for one canonical chat message (content, tool calls, tool_call_id, role overhead).
int64_t estimate_message_tokens(const json& message);

// Raw estimate for a whole request: every message plus the tools array (schemas count too).
int64_t estimate_request_tokens(const json& messages, const json& tools);

inline int64_t calibrated(int64_t raw, double ratio) {
  return static_cast<int64_t>(static_cast<double>(raw) * ratio + 0.999);
}

}  // namespace marathon::context
