// `grep`: lines matching a regular expression (RE2: linear time) in workspace files, capped.
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_grep_tool();

}  // namespace marathon
