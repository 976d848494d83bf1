#include "tools/tool_write_file.h"

#include "tools/file_io.h"
#include "tools/tool_error.h"
#include "tools/workspace_path.h"

namespace marathon {
namespace {

class WriteFileTool : public Tool {
 public:
  std::string name() const override { return "write_file"; }
  std::string description() const override {
    return "Create or replace a file of the workspace with the given content (parent folders are "
           "created).";
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
    if (content.size() > kMaxFileBytes) {
      return tool_error("write_file " + path + ": " + std::to_string(content.size()) +
                        " bytes is more than the limit of " + std::to_string(kMaxFileBytes));
    }
    WorkspacePath wp = resolve_workspace_path(ctx.workspace, path);
    if (!wp.ok()) return tool_error(wp.error);
    std::string error;
    if (!write_whole_file(wp.absolute, content, &error)) {
      return tool_error("write_file " + path + ": " + error);
    }
    ToolResult r;
    r.output = "wrote " + std::to_string(content.size()) + " bytes to " + wp.relative;
    r.events.push_back(workspace_written(wp.relative, content, ctx));
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_write_file_tool() { return std::make_unique<WriteFileTool>(); }

}  // namespace marathon
