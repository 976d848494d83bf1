// `list_files`: the files under a workspace folder, with sizes, capped.
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_list_files_tool();

}  // namespace marathon
