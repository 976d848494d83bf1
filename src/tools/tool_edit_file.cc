#include "tools/tool_edit_file.h"

#include <algorithm>

#include "tools/file_io.h"
#include "tools/tool_error.h"
#include "tools/workspace_path.h"

namespace marathon {
namespace {

class EditFileTool : public Tool {
 public:
  std::string name() const override { return "edit_file"; }
  std::string description() const override {
    return "Replace one exact occurrence of old_string with new_string in a workspace file. Fails "
           "if old_string occurs 0 times or more than once (include more surrounding lines to make "
           "it unique).";
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties",
             {{"path", {{"type", "string"}, {"description", "path relative to the workspace"}}},
              {"old_string", {{"type", "string"}, {"minLength", 1}}},
              {"new_string", {{"type", "string"}}}}},
            {"required", {"path", "old_string", "new_string"}},
            {"additionalProperties", false}};
  }

  ToolResult run(const json& args, ToolContext& ctx) override {
    std::string path = args["path"].get<std::string>();
    const std::string& old_s = args["old_string"].get_ref<const std::string&>();
    const std::string& new_s = args["new_string"].get_ref<const std::string&>();
    WorkspacePath wp = resolve_workspace_path(ctx.workspace, path);
    if (!wp.ok()) return tool_error(wp.error);
    std::string error;
    auto bytes = read_whole_file(wp.absolute, kMaxFileBytes, &error);
    if (!bytes) return tool_error("edit_file " + path + ": " + error);
    std::vector<size_t> at;
    for (size_t p = bytes->find(old_s); p != std::string::npos; p = bytes->find(old_s, p + 1)) {
      at.push_back(p);
    }
    if (at.empty()) {
      return tool_error("edit_file " + path +
                        ": old_string not found (0 matches); read the file and copy the text "
                        "exactly, whitespace included");
    }
    if (at.size() > 1) {
      std::string lines;
      for (size_t i = 0; i < at.size() && i < 10; ++i) {
        size_t line = 1 + std::count(bytes->begin(), bytes->begin() + at[i], '\n');
        lines += (i ? ", " : "") + std::to_string(line);
      }
      return tool_error("edit_file " + path + ": old_string matches " + std::to_string(at.size()) +
                        " times (at lines " + lines +
                        "); include more surrounding text so that it matches exactly once");
    }
    std::string updated = bytes->substr(0, at[0]) + new_s + bytes->substr(at[0] + old_s.size());
    if (!write_whole_file(wp.absolute, updated, &error)) {
      return tool_error("edit_file " + path + ": " + error);
    }
    size_t line = 1 + std::count(bytes->begin(), bytes->begin() + at[0], '\n');
    ToolResult r;
    r.output = "edited " + wp.relative + " at line " + std::to_string(line) + " (" +
               std::to_string(bytes->size()) + " -> " + std::to_string(updated.size()) + " bytes)";
    r.events.push_back(workspace_written(wp.relative, updated, ctx));
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_edit_file_tool() { return std::make_unique<EditFileTool>(); }

}  // namespace marathon
