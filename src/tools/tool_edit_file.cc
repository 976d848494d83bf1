#include "tools/tool_edit_file.h"

#include <algorithm>

#include "tools/file_io.h"
#include "tools/tool_error.h"

namespace marathon {
namespace {

class EditFileTool : public Tool {
 public:
  std::string name() const override { return "edit_file"; }
  std::string description() const override {
    return "Replace one exact occurrence of old_string with new_string in a workspace file. Fails "
           "if old_string occurs 0 times or more than once (include more surrounding lines to make "
           "it unique). Only the task's editable files and files under scratch/ may be edited.";
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
    if (std::string refusal = write_refusal(ctx, "edit_file", path); !refusal.empty()) {
      return tool_error(refusal);
    }
    std::string error;
    std::optional<ConfinedDir> ws = open_workspace(ctx, &error);
    if (!ws) return tool_error("edit_file: " + error);
    FsResult<std::string> bytes = ws->read(path, kMaxFileBytes);
    if (!bytes.ok()) return tool_error("edit_file " + bytes.error().message());
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
    if (updated.size() > kMaxFileBytes) {
      return tool_error("edit_file " + path + ": the result would be " +
                        std::to_string(updated.size()) + " bytes, more than the limit of " +
                        std::to_string(kMaxFileBytes));
    }
    FsResult<std::string> written = ws->write(path, updated);
    if (!written.ok()) return tool_error("edit_file " + written.error().message());
    size_t line = 1 + std::count(bytes->begin(), bytes->begin() + at[0], '\n');
    ToolResult r;
    r.output = "edited " + *written + " at line " + std::to_string(line) + " (" +
               std::to_string(bytes->size()) + " -> " + std::to_string(updated.size()) + " bytes)";
    r.events.push_back(workspace_written(*written, updated, ctx));
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_edit_file_tool() { return std::make_unique<EditFileTool>(); }

}  // namespace marathon
