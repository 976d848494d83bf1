#include "tools/tool_write_file.h"

#include "tools/file_io.h"
#include "tools/tool_error.h"

namespace marathon {
namespace {

class WriteFileTool : public Tool {
 public:
  std::string name() const override { return "write_file"; }
  std::string description() const override {
    return "Create or replace a file of the workspace with the given content (parent folders are "
           "created). Only the task's editable files and files under scratch/ may be written.";
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties",
             {{"path", {{"type", "string"}, {"description", "path relative to the workspace"}}},
              {"content", {{"type", "string"}}}}},
            {"required", {"path", "content"}},
            {"additionalProperties", false}};
  }
  bool idempotent() const override { return true; }  // the same content again is the same state

  ToolResult run(const json& args, ToolContext& ctx) override {
    std::string path = args["path"].get<std::string>();
    const std::string& content = args["content"].get_ref<const std::string&>();
    if (std::string refusal = write_refusal(ctx, "write_file", path); !refusal.empty()) {
      return tool_error(refusal);
    }
    if (content.size() > kMaxFileBytes) {
      return tool_error("write_file " + path + ": " + std::to_string(content.size()) +
                        " bytes is more than the limit of " + std::to_string(kMaxFileBytes));
    }
    std::string error;
    std::optional<ConfinedDir> ws = open_workspace(ctx, &error);
    if (!ws) return tool_error("write_file: " + error);
    FsResult<std::string> written = ws->write(path, content);
    if (!written.ok()) return tool_error("write_file " + written.error().message());
    ToolResult r;
    r.output = "wrote " + std::to_string(content.size()) + " bytes to " + *written;
    r.events.push_back(workspace_written(*written, content, ctx));
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_write_file_tool() { return std::make_unique<WriteFileTool>(); }

}  // namespace marathon
