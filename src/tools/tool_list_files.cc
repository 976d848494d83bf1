#include "tools/tool_list_files.h"

#include <algorithm>

#include "tools/tool_error.h"
#include "tools/workspace_path.h"

namespace marathon {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxEntries = 500;

class ListFilesTool : public Tool {
 public:
  std::string name() const override { return "list_files"; }
  std::string description() const override {
    return "List the files under a workspace folder (default: the whole workspace) with their "
           "sizes; at most " +
           std::to_string(kMaxEntries) + " entries.";
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties",
             {{"path", {{"type", "string"}, {"description", "folder relative to the workspace"}}},
              {"recursive", {{"type", "boolean"}, {"description", "default true"}}}}},
            {"additionalProperties", false}};
  }
  bool idempotent() const override { return true; }

  ToolResult run(const json& args, ToolContext& ctx) override {
    std::string path = args.value("path", ".");
    bool recursive = args.value("recursive", true);
    WorkspacePath wp = resolve_workspace_path(ctx.workspace, path);
    if (!wp.ok()) return tool_error(wp.error);
    std::error_code ec;
    if (!fs::is_directory(wp.absolute, ec)) {
      return tool_error("list_files " + path + ": not a folder" +
                        (fs::exists(wp.absolute, ec) ? " (use read_file)" : " (no such path)"));
    }
    fs::path root = fs::canonical(ctx.workspace, ec);
    std::vector<std::string> entries;
    size_t total = 0;
    auto visit = [&](const fs::directory_entry& e) {
      std::string rel = e.path().lexically_relative(root).generic_string();
      ++total;
      if (entries.size() >= kMaxEntries) return;
      std::error_code e2;
      if (e.is_symlink(e2)) {
        entries.push_back(rel + " -> " + fs::read_symlink(e.path(), e2).string());
      } else if (e.is_directory(e2)) {
        entries.push_back(rel + "/");
      } else {
        entries.push_back(rel + "  (" + std::to_string(e.file_size(e2)) + " bytes)");
      }
    };
    auto opts = fs::directory_options::skip_permission_denied;
    if (recursive) {
      for (auto it = fs::recursive_directory_iterator(wp.absolute, opts, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->path().filename() == ".git") it.disable_recursion_pending();
        visit(*it);
      }
    } else {
      for (auto it = fs::directory_iterator(wp.absolute, opts, ec);
           !ec && it != fs::directory_iterator(); it.increment(ec)) {
        visit(*it);
      }
    }
    std::sort(entries.begin(), entries.end());
    ToolResult r;
    for (const auto& e : entries) r.output += e + "\n";
    if (total > entries.size()) {
      r.output += "[" + std::to_string(total - entries.size()) +
                  " more entries not shown; list a subfolder]\n";
    }
    if (total == 0) r.output = "(empty folder)\n";
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_list_files_tool() { return std::make_unique<ListFilesTool>(); }

}  // namespace marathon
