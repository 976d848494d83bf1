// `finish`: the model declares the run done with a summary; the run ends (run.finished{finish}).
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_finish_tool();

}  // namespace marathon
