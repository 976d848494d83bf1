// A failed tool call: the message is what the model reads.
#pragma once

#include <string>

#include "tools/tool.h"

namespace marathon {

inline ToolResult tool_error(std::string message) {
  ToolResult r;
  r.ok = false;
  r.output = std::move(message);
  return r;
}

}  // namespace marathon
