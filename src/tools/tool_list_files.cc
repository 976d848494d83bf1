#include "tools/tool_list_files.h"

#include <algorithm>

#include "tools/file_io.h"
#include "tools/tool_error.h"

namespace marathon {
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
    std::string error;
    std::optional<ConfinedDir> ws = open_workspace(ctx, &error);
    if (!ws) return tool_error("list_files: " + error);
    FsResult<FileInfo> at = ws->stat(path);
    if (!at.ok()) return tool_error("list_files " + at.error().message());
    if (at->kind != EntryKind::kDir) {
      return tool_error("list_files " + path + ": not a folder" +
                        (at->kind == EntryKind::kMissing ? " (no such path)" : " (use read_file)"));
    }
    std::vector<std::string> entries;
    size_t total = 0;
    // Links are listed with their text and never entered, whatever they point to.
    FsResult<size_t> walked = ws->walk(at->path, [&](const FileInfo& e) {
      ++total;
      if (entries.size() < kMaxEntries) {
        if (e.kind == EntryKind::kLink) {
          entries.push_back(e.path + " -> " + e.link_target);
        } else if (e.kind == EntryKind::kDir) {
          entries.push_back(e.path + "/");
        } else if (e.kind == EntryKind::kFile) {
          entries.push_back(e.path + "  (" + std::to_string(e.size) + " bytes)");
        } else {
          entries.push_back(e.path + "  (" + describe(e.kind) + ")");
        }
      }
      return recursive && e.path.substr(e.path.rfind('/') + 1) != ".git";
    });
    if (!walked.ok()) return tool_error("list_files " + walked.error().message());
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
