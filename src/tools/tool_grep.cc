#include "tools/tool_grep.h"

#include <fnmatch.h>
#include <re2/re2.h>

#include "tools/file_io.h"
#include "tools/tool_error.h"

namespace marathon {
namespace {

constexpr int kDefaultMatches = 100;
constexpr int kMaxMatches = 1000;
constexpr size_t kMaxLineShown = 300;
// RE2 matches in time linear in the line and memory bounded by the compiled program, whatever
// the pattern (no backtracking, no recursion): a model's pattern cannot stall the runner. Its
// compiled form is held under this budget; a larger pattern is refused as invalid.
constexpr int64_t kMaxPatternMemory = 8 << 20;

class GrepTool : public Tool {
 public:
  std::string name() const override { return "grep"; }
  std::string description() const override {
    return "Search workspace files for lines matching a regular expression (RE2 syntax, as "
           "Python's re without backreferences or lookaround). "
           "Prints path:line: text, at most max_matches lines (default " +
           std::to_string(kDefaultMatches) + ").";
  }
  json parameters() const override {
    return {
        {"type", "object"},
        {"properties",
         {{"pattern", {{"type", "string"}, {"minLength", 1}}},
          {"path", {{"type", "string"}, {"description", "file or folder; default the workspace"}}},
          {"glob", {{"type", "string"}, {"description", "only file names matching, e.g. *.py"}}},
          {"ignore_case", {{"type", "boolean"}}},
          {"max_matches", {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxMatches}}}}},
        {"required", {"pattern"}},
        {"additionalProperties", false}};
  }
  bool idempotent() const override { return true; }

  ToolResult run(const json& args, ToolContext& ctx) override {
    std::string pattern = args["pattern"].get<std::string>();
    std::string path = args.value("path", ".");
    std::string glob = args.value("glob", "");
    int max_matches = args.value("max_matches", kDefaultMatches);
    RE2::Options options;
    options.set_case_sensitive(!args.value("ignore_case", false));
    options.set_log_errors(false);
    options.set_max_mem(kMaxPatternMemory);
    RE2 re(pattern, options);
    if (!re.ok()) {
      return tool_error("grep: invalid regular expression '" + pattern + "': " + re.error());
    }
    std::string error;
    std::optional<ConfinedDir> ws = open_workspace(ctx, &error);
    if (!ws) return tool_error("grep: " + error);
    FsResult<FileInfo> at = ws->stat(path);
    if (!at.ok()) return tool_error("grep " + at.error().message());
    std::vector<std::string> files;  // resolved, relative to the workspace, sorted by the walk
    if (at->kind == EntryKind::kFile) {
      files.push_back(at->path);
    } else if (at->kind == EntryKind::kDir) {
      // Like grep -r: links met on the way are not followed, in or out of the workspace.
      FsResult<size_t> walked = ws->walk(at->path, [&](const FileInfo& e) {
        std::string name = e.path.substr(e.path.rfind('/') + 1);
        if (e.kind == EntryKind::kDir) return name != ".git";
        if (e.kind != EntryKind::kFile) return false;
        if (glob.empty() || fnmatch(glob.c_str(), name.c_str(), 0) == 0) files.push_back(e.path);
        return false;
      });
      if (!walked.ok()) return tool_error("grep " + walked.error().message());
    } else if (at->kind == EntryKind::kMissing) {
      return tool_error("grep " + path + ": no such file or folder");
    } else {
      return tool_error("grep " + path + ": is a " + describe(at->kind) + ", not searched");
    }
    ToolResult r;
    int matches = 0;
    bool more = false;
    for (const std::string& rel : files) {
      FsResult<std::string> bytes = ws->read(rel, kMaxFileBytes, Links::kNone);
      if (!bytes.ok() || looks_binary(*bytes)) continue;
      size_t line_no = 0;
      for (size_t b = 0; b < bytes->size() && !more;) {
        size_t e = bytes->find('\n', b);
        if (e == std::string::npos) e = bytes->size();
        ++line_no;
        if (RE2::PartialMatch(std::string_view(*bytes).substr(b, e - b), re)) {
          if (matches == max_matches) {
            more = true;
            break;
          }
          ++matches;
          std::string text = bytes->substr(b, std::min(e - b, kMaxLineShown));
          if (e - b > kMaxLineShown) text += "...";
          r.output += rel + ":" + std::to_string(line_no) + ": " + text + "\n";
        }
        b = e + 1;
      }
      if (more) break;
    }
    if (matches == 0) r.output = "no matches for /" + pattern + "/ in " + at->path + "\n";
    if (more) {
      r.output += "[stopped at " + std::to_string(max_matches) +
                  " matches; narrow the pattern, path or glob]\n";
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_grep_tool() { return std::make_unique<GrepTool>(); }

}  // namespace marathon
