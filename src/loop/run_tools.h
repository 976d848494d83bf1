// The tools a run offers the model: workspace files, the sandboxed shell, evaluate, profile, note,
// recall, revert, finish.
#pragma once

#include "loop/tool_set.h"

namespace marathon {

ToolSet make_run_tools();

}  // namespace marathon
