// `read_file`: a workspace text file, whole or a line range, capped (the cap says how to see more).
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_read_file_tool();

}  // namespace marathon
