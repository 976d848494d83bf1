// `profile`: the task's evaluator with profiling asked for (env MARATHON_PROFILE=1); the evaluator
// (for GPU tasks, harness/ with Nsight Compute) reduces the profile to a few lines in its log. A
// GPU task on a machine without a GPU gets a clear message instead. Output only: no evaluation is
// recorded (the numbers are not comparable with a timed run).
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_profile_tool();

}  // namespace marathon
