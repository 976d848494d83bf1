// `revert`: the workspace goes back to the files of an evaluated candidate (its snapshot in
// State::candidates), each restored file a workspace.written event, each file the candidate did
// not have deleted (workspace.written{deleted}).
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_revert_tool();

}  // namespace marathon
