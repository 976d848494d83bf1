#include "tools/workspace_path.h"

#include <system_error>

namespace marathon {
namespace fs = std::filesystem;

namespace {

bool is_within(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (r->empty()) continue;  // a trailing separator
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

}  // namespace

WorkspacePath resolve_workspace_path(const fs::path& workspace, const std::string& path) {
  WorkspacePath out;
  if (path.empty()) {
    out.error = "empty path";
    return out;
  }
  if (path.find('\0') != std::string::npos) {
    out.error = "path contains a NUL byte";
    return out;
  }
  fs::path given(path);
  if (given.is_absolute()) {
    out.error = "absolute path '" + path + "' refused: give a path relative to the workspace";
    return out;
  }
  for (const auto& part : given) {
    if (part == "..") {
      out.error = "path '" + path + "' refused: '..' may leave the workspace";
      return out;
    }
  }
  std::error_code ec;
  fs::path root = fs::canonical(workspace, ec);
  if (ec) {
    out.error = "workspace " + workspace.string() + " is not accessible: " + ec.message();
    return out;
  }
  // Follow the chain of links by hand: weakly_canonical treats a dangling link as a plain name, and
  // a write through it would land wherever it points.
  fs::path p = root / given.lexically_normal();
  for (int hops = 0;; ++hops) {
    p = fs::weakly_canonical(p, ec);
    if (ec) {
      out.error = "path '" + path + "' cannot be resolved: " + ec.message();
      return out;
    }
    if (!is_within(root, p)) {
      out.error =
          "path '" + path + "' refused: it resolves outside the workspace (through a symlink)";
      return out;
    }
    if (!fs::is_symlink(fs::symlink_status(p, ec))) break;
    if (hops >= 40) {
      out.error = "path '" + path + "' refused: too many levels of symlinks";
      return out;
    }
    fs::path target = fs::read_symlink(p, ec);
    if (ec) {
      out.error = "path '" + path + "': cannot read symlink: " + ec.message();
      return out;
    }
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  out.absolute = p;
  out.relative = p == root ? "." : p.lexically_relative(root).generic_string();
  return out;
}

}  // namespace marathon
