#include "tools/tool_revert.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace marathon {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMinPrefix = 6;

void write_file(const fs::path& p, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", p.string()));
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
    int written = 0, deleted = 0;
    for (const auto& [path, sha] : snapshot) {
      auto cur = s.workspace.find(path);
      if (cur != s.workspace.end() && cur->second == sha) continue;
      std::string bytes = ctx.get_blob(sha);
      write_file(ctx.workspace / path, bytes);
      events::WorkspaceWritten w;
      w.path = path;
      w.sha = sha;
      w.size = static_cast<int64_t>(bytes.size());
      w.source = events::WorkspaceWritten::kRevert;
      r.events.push_back(make_event(w));
      ++written;
    }
    for (const auto& [path, sha] : s.workspace) {
      if (snapshot.count(path)) continue;
      std::error_code ec;
      fs::remove(ctx.workspace / path, ec);
      events::WorkspaceWritten w;
      w.path = path;
      w.deleted = true;
      w.source = events::WorkspaceWritten::kRevert;
      r.events.push_back(make_event(w));
      ++deleted;
    }
    r.output = fmt::format("workspace reverted to candidate {}: {} file(s) restored, {} deleted",
                           matches[0].substr(0, 12), written, deleted);
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_revert_tool() { return std::make_unique<RevertTool>(); }

}  // namespace marathon
