#include "tools/file_io.h"

#include <algorithm>

#include "core/confined_path.h"
#include "core/event_store.h"
#include "goal/task_spec.h"

namespace marathon {

std::optional<ConfinedDir> open_workspace(const ToolContext& ctx, std::string* error) {
  FsResult<ConfinedDir> dir = ConfinedDir::open(ctx.workspace);
  if (!dir.ok()) {
    *error = dir.error().message();
    return std::nullopt;
  }
  return std::move(dir.value());
}

bool looks_binary(const std::string& bytes) {
  return bytes.find('\0', 0) < std::min<size_t>(bytes.size(), 8192);
}

NewEvent workspace_written(const std::string& relative, const std::string& bytes,
                           ToolContext& ctx) {
  std::string sha = ctx.put_blob ? ctx.put_blob(bytes) : sha256_hex(bytes);
  events::WorkspaceWritten w;
  w.path = relative;
  w.sha = sha;
  w.size = static_cast<int64_t>(bytes.size());
  return make_event(w);
}

std::string write_refusal(const ToolContext& ctx, const std::string& tool,
                          const std::string& path) {
  if (ctx.state == nullptr || !ctx.state->task.is_object()) return "";
  const json& task = ctx.state->task;
  auto files = task.find("files");
  if (files == task.end() || !files->is_object() || !files->contains("editable") ||
      !files->at("editable").is_array()) {
    return "";
  }
  std::string error;
  std::optional<PathParts> parts = normalize_relative(path, &error);
  if (!parts) return tool + " " + path + ": " + error;  // ConfinedDir would refuse it as well
  const std::string rel = join_parts(*parts);
  if (parts->size() >= 2 && parts->front() == kScratchDir) return "";
  std::string globs;
  for (const char* key : {"editable", "writable"}) {
    if (!files->contains(key) || !files->at(key).is_array()) continue;
    for (const json& g : files->at(key)) {
      if (!g.is_string()) continue;
      if (glob_match(g.get<std::string>(), rel)) return "";
      globs += (globs.empty() ? "" : ", ") + g.get<std::string>();
    }
  }
  return tool + " " + path + ": not an editable file of this task; " + tool +
         " may write the task's editable files (" + (globs.empty() ? "none" : globs) +
         ") and anything under " + kScratchDir + "/";
}

}  // namespace marathon
