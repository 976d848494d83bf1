// `write_file`: creates or replaces a workspace file; the new version is a blob
// (workspace.written).
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_write_file_tool();

}  // namespace marathon
