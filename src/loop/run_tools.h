// The tools a run offers the model: workspace files, the sandboxed shell, evaluate, profile, note,
// recall, revert, finish.
#pragma once

#include "core/state.h"
#include "tools/tool_registry.h"

namespace marathon {

// `state`: the run (a GPU task gives `run` the GPU). Null: a CPU task.
ToolRegistry make_run_tools(const State* state = nullptr);

}  // namespace marathon
