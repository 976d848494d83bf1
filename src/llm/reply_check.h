// Checks the tool calls of a canonical assistant message against the tools offered in the request:
// arguments that are not a JSON object, names that are missing or not offered. Pure.
#pragma once

#include <vector>

#include "llm/provider.h"

namespace marathon::llm {

std::vector<ReplyProblem> check_tool_calls(const json& message, const json& offered_tools);

}  // namespace marathon::llm
