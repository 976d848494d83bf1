#include "tools/file_io.h"

#include <algorithm>

#include "core/event_store.h"

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

}  // namespace marathon
