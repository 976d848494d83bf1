// `revert`: the workspace goes back to the files of an evaluated candidate (its snapshot in
// State::candidates), each restored file a workspace.written event, each file the candidate did
// not have deleted (workspace.written{deleted}). All through ConfinedDir with the log deciding: no
// link in the workspace is followed, a link in the way is replaced, never its target written or
// deleted. Files the disk already holds as logged are not rewritten; a file that cannot be put
// back fails the call and is named, and only what was done is logged.
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_revert_tool();

}  // namespace marathon
