// `finish`: the model declares the run done with a summary; the run ends (run.finished{finish}).
// Refused while no evaluation has been correct, unless the task lifts it ([goal]
// finish_needs_correct_evaluation = false): a run that ends must have a result.
#pragma once

#include <memory>
#include <string>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_finish_tool();

// "" when `finish` may end the run in `state` (null: no state, allowed); else the refusal the model
// reads.
std::string finish_refusal(const State* state);

}  // namespace marathon
