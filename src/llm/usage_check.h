// Token usage as a provider reports it is input from the network, not a fact: a count that is
// negative, fractional, not a number, or absurdly large would lower the recorded spend or overflow
// it. These pure functions read a reply's usage fields and say what is wrong with them; the
// provider then replaces the reply's usage by the runtime's own estimate (http_provider.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/event.h"

namespace marathon::llm {

// No single model call reads or writes this many tokens: a count at or above it is rejected.
inline constexpr int64_t kMaxUsageTokensPerCall = 100'000'000;

// Reads `usage[key]`. Absent or null: 0, no problem. Otherwise the value must be a finite,
// non-negative integer (an integral float such as 120.0 is accepted) below
// kMaxUsageTokensPerCall; if not, 0 is returned and `problems` gets a line naming the field,
// the value and what is wrong ("usage.prompt_tokens = -5: negative").
int64_t read_usage_count(const json& usage, const char* key, std::vector<std::string>* problems);

// The same check for a count already read (e.g. a sum of several fields): `what` names it.
void check_usage_total(int64_t value, const std::string& what, std::vector<std::string>* problems);

}  // namespace marathon::llm
