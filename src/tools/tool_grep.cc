#include "tools/tool_grep.h"

#include <fnmatch.h>

#include <regex>

#include "tools/file_io.h"
#include "tools/tool_error.h"
#include "tools/workspace_path.h"

namespace marathon {
namespace fs = std::filesystem;
namespace {

constexpr int kDefaultMatches = 100;
constexpr int kMaxMatches = 1000;
constexpr size_t kMaxLineMatched = 4096;  // std::regex recurses per character: bound the input
constexpr size_t kMaxLineShown = 300;

class GrepTool : public Tool {
 public:
  std::string name() const override { return "grep"; }
  std::string description() const override {
    return "Search workspace files for lines matching a regular expression (ECMAScript syntax). "
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
    auto flags = std::regex::ECMAScript | std::regex::optimize;
    if (args.value("ignore_case", false)) flags |= std::regex::icase;
    std::regex re;
    try {
      re = std::regex(pattern, flags);
    } catch (const std::regex_error& e) {
      return tool_error("grep: invalid regular expression '" + pattern + "': " + e.what());
    }
    WorkspacePath wp = resolve_workspace_path(ctx.workspace, path);
    if (!wp.ok()) return tool_error(wp.error);
    std::error_code ec;
    fs::path root = fs::canonical(ctx.workspace, ec);
    std::vector<fs::path> files;
    if (fs::is_regular_file(wp.absolute, ec)) {
      files.push_back(wp.absolute);
    } else if (fs::is_directory(wp.absolute, ec)) {
      auto opts = fs::directory_options::skip_permission_denied;
      for (auto it = fs::recursive_directory_iterator(wp.absolute, opts, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->path().filename() == ".git") {
          it.disable_recursion_pending();
          continue;
        }
        if (!it->is_regular_file()) continue;
        if (!glob.empty() && fnmatch(glob.c_str(), it->path().filename().c_str(), 0) != 0) continue;
        // A symlink to a file outside the workspace is not followed.
        auto rel = it->path().lexically_relative(root).generic_string();
        if (!resolve_workspace_path(ctx.workspace, rel).ok()) continue;
        files.push_back(it->path());
      }
    } else {
      return tool_error("grep " + path + ": no such file or folder");
    }
    std::sort(files.begin(), files.end());
    ToolResult r;
    int matches = 0;
    bool more = false;
    for (const auto& f : files) {
      std::string error;
      auto bytes = read_whole_file(f, kMaxFileBytes, &error);
      if (!bytes || looks_binary(*bytes)) continue;
      std::string rel = f.lexically_relative(root).generic_string();
      size_t line_no = 0;
      for (size_t b = 0; b < bytes->size() && !more;) {
        size_t e = bytes->find('\n', b);
        if (e == std::string::npos) e = bytes->size();
        ++line_no;
        size_t n = std::min(e - b, kMaxLineMatched);
        if (std::regex_search(bytes->begin() + b, bytes->begin() + b + n, re)) {
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
    if (matches == 0) r.output = "no matches for /" + pattern + "/ in " + wp.relative + "\n";
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
