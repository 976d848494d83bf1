// `edit_file`: replaces one exact occurrence of a string; 0 or several matches fail and say how
// many.
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_edit_file_tool();

}  // namespace marathon
