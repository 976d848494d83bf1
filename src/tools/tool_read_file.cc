#include "tools/tool_read_file.h"

#include "tools/file_io.h"
#include "tools/tool_error.h"

namespace marathon {
namespace {

constexpr int64_t kMaxLines = 2000;
constexpr size_t kMaxChars = 100'000;

class ReadFileTool : public Tool {
 public:
  std::string name() const override { return "read_file"; }
  std::string description() const override {
    return "Read a text file of the workspace. Optional 1-based inclusive line range. At most " +
           std::to_string(kMaxLines) + " lines / " + std::to_string(kMaxChars) +
           " characters per call; the reply says when there is more.";
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties",
             {{"path", {{"type", "string"}, {"description", "path relative to the workspace"}}},
              {"start_line", {{"type", "integer"}, {"minimum", 1}}},
              {"end_line", {{"type", "integer"}, {"minimum", 1}}}}},
            {"required", {"path"}},
            {"additionalProperties", false}};
  }
  bool idempotent() const override { return true; }

  ToolResult run(const json& args, ToolContext& ctx) override {
    ToolResult r;
    std::string path = args["path"].get<std::string>();
    std::string error;
    std::optional<ConfinedDir> ws = open_workspace(ctx, &error);
    if (!ws) return tool_error("read_file: " + error);
    FsResult<std::string> bytes = ws->read(path, kMaxFileBytes);
    if (!bytes.ok()) {
      std::string hint = bytes.error().reason == "is a folder" ? " (use list_files)" : "";
      return tool_error("read_file " + bytes.error().message() + hint);
    }
    if (looks_binary(*bytes)) {
      return tool_error("read_file " + path + ": binary file (" + std::to_string(bytes->size()) +
                        " bytes); not shown");
    }
    std::vector<std::pair<size_t, size_t>> lines;  // [begin, end) of each line, without '\n'
    for (size_t b = 0; b < bytes->size();) {
      size_t e = bytes->find('\n', b);
      if (e == std::string::npos) e = bytes->size();
      lines.emplace_back(b, e);
      b = e + 1;
    }
    int64_t total = static_cast<int64_t>(lines.size());
    int64_t first = args.value("start_line", int64_t{1});
    int64_t last = args.value("end_line", total);
    if (total == 0) {
      r.output = "(" + path + " is empty)";
      return r;
    }
    if (first > total) {
      return tool_error("read_file " + path + ": start_line " + std::to_string(first) +
                        " is past the end (" + std::to_string(total) + " lines)");
    }
    if (last < first) return tool_error("read_file " + path + ": end_line is before start_line");
    last = std::min(last, total);
    std::string out;
    int64_t shown_last = first - 1;
    for (int64_t i = first; i <= last; ++i) {
      auto [b, e] = lines[i - 1];
      if (i - first >= kMaxLines || out.size() + (e - b) + 1 > kMaxChars) break;
      out.append(*bytes, b, e - b);
      out += '\n';
      shown_last = i;
    }
    if (shown_last < last) {
      out += "[truncated: showed lines " + std::to_string(first) + "-" +
             std::to_string(shown_last) + " of " + std::to_string(total) +
             "; read on with start_line=" + std::to_string(shown_last + 1) + "]\n";
    } else if (first > 1 || last < total) {
      out += "[lines " + std::to_string(first) + "-" + std::to_string(last) + " of " +
             std::to_string(total) + "]\n";
    }
    r.output = std::move(out);
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_read_file_tool() { return std::make_unique<ReadFileTool>(); }

}  // namespace marathon
