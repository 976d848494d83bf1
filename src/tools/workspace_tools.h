// The workspace tools in one list: read_file, write_file, edit_file, list_files, grep, run.
#pragma once

#include <memory>
#include <vector>

#include "tools/tool.h"
#include "tools/tool_run.h"

namespace marathon {

std::vector<std::unique_ptr<Tool>> make_workspace_tools(RunToolOptions run_options = {});

}  // namespace marathon
