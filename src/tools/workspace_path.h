// Confinement of tool paths to the workspace. A path the model gives is relative to the workspace;
// absolute paths, `..` components, and symlinks whose target lies outside are refused, for reading
// and for writing (a write never goes through a link that leaves the workspace, dangling or not).
#pragma once

#include <filesystem>
#include <string>

namespace marathon {

struct WorkspacePath {
  std::filesystem::path absolute;  // resolved (symlinks followed), inside the workspace
  std::string relative;            // as recorded in events: generic form, relative to the root
  std::string error;               // non-empty: refused, says why
  bool ok() const { return error.empty(); }
};

WorkspacePath resolve_workspace_path(const std::filesystem::path& workspace,
                                     const std::string& path);

}  // namespace marathon
