#include "tools/tool_revert.h"

#include <fmt/format.h>

#include "core/confined_dir.h"

namespace marathon {
namespace {

constexpr size_t kMinPrefix = 6;

// Whether the workspace already holds exactly these bytes at `path` as a regular file.
bool holds(const ConfinedDir& ws, const std::string& path, const std::string& bytes) {
  FsResult<std::string> disk = ws.read(path, bytes.size(), Links::kNone);
  return disk.ok() && *disk == bytes;
}

class RevertTool : public Tool {
 public:
  std::string name() const override { return "revert"; }
  std::string description() const override {
    return "Restore the workspace to the files of a candidate that was evaluated earlier, given "
           "its hash (or a unique prefix of at least 6 characters), e.g. the best candidate.";
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties", {{"candidate", {{"type", "string"}, {"minLength", 1}}}}},
            {"required", {"candidate"}},
            {"additionalProperties", false}};
  }
  // Re-running it restores the same files: the log, not the disk, decides what it writes.
  bool idempotent() const override { return true; }

  ToolResult run(const json& args, ToolContext& ctx) override {
    ToolResult r;
    std::string want = args.at("candidate").get<std::string>();
    const State& s = *ctx.state;
    std::vector<std::string> matches;
    for (const auto& [hash, files] : s.candidates) {
      if (hash == want || (want.size() >= kMinPrefix && hash.rfind(want, 0) == 0)) {
        matches.push_back(hash);
      }
    }
    if (matches.size() != 1) {
      r.ok = false;
      std::string known;
      for (const auto& [hash, files] : s.candidates) {
        known += (known.empty() ? "" : ", ") + hash.substr(0, 12);
      }
      r.output = matches.empty()
                     ? fmt::format("error: no evaluated candidate matches \"{}\"; known: {}", want,
                                   known.empty() ? "none yet (evaluate first)" : known)
                     : fmt::format("error: \"{}\" matches {} candidates; give more characters",
                                   want, matches.size());
      return r;
    }
    const auto& snapshot = s.candidates.at(matches[0]);
    FsResult<ConfinedDir> ws = ConfinedDir::open(ctx.workspace);
    if (!ws.ok()) {
      r.ok = false;
      r.output = "error: " + ws.error().message();
      return r;
    }
    // Files are put back as the log has them: no link in the workspace is followed, and a link
    // standing where a file or folder of the candidate goes is replaced (the link, not its
    // target). Deletions come first so that a folder of the candidate may take a file's place.
    std::vector<std::string> failed;
    int written = 0, deleted = 0;
    for (const auto& [path, sha] : s.workspace) {
      if (snapshot.count(path)) continue;
      FsResult<bool> gone = ws->remove(path);
      if (!gone.ok() && gone.error().reason != "is a folder") {
        failed.push_back(gone.error().message());
        continue;
      }
      events::WorkspaceWritten w;
      w.path = path;
      w.deleted = true;
      w.source = events::WorkspaceWritten::kRevert;
      r.events.push_back(make_event(w));
      ++deleted;
    }
    for (const auto& [path, sha] : snapshot) {
      std::string bytes = ctx.get_blob(sha);
      if (!holds(*ws, path, bytes)) {  // also when the log agrees but `run` changed the disk
        FsResult<std::string> w = ws->write(path, bytes, WriteLinks::kReplace);
        if (!w.ok()) {
          failed.push_back(w.error().message());
          continue;
        }
      }
      auto cur = s.workspace.find(path);
      if (cur != s.workspace.end() && cur->second == sha) continue;
      events::WorkspaceWritten w;
      w.path = path;
      w.sha = sha;
      w.size = static_cast<int64_t>(bytes.size());
      w.source = events::WorkspaceWritten::kRevert;
      r.events.push_back(make_event(w));
      ++written;
    }
    if (!failed.empty()) {
      r.ok = false;
      std::string list;
      for (const std::string& f : failed) list += "\n  " + f;
      r.output = fmt::format(
          "error: workspace partly reverted to candidate {}: {} file(s) restored, {} deleted; "
          "not restored:{}",
          matches[0].substr(0, 12), written, deleted, list);
      return r;
    }
    r.output = fmt::format("workspace reverted to candidate {}: {} file(s) restored, {} deleted",
                           matches[0].substr(0, 12), written, deleted);
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_revert_tool() { return std::make_unique<RevertTool>(); }

}  // namespace marathon
