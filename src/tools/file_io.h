// What the workspace tools share: the workspace of a call as a ConfinedDir (core/confined_dir.h,
// every path confined beneath it, no link out followed, special files refused), the
// workspace.written event a write implies, and the size limit.
#pragma once

#include <optional>
#include <string>

#include "core/confined_dir.h"
#include "core/event.h"
#include "tools/tool.h"

namespace marathon {

// ctx.workspace opened for confined access; nullopt with *error set when it cannot be opened.
std::optional<ConfinedDir> open_workspace(const ToolContext& ctx, std::string* error);

// A NUL byte in the first 8 KiB.
bool looks_binary(const std::string& bytes);

// workspace.written {path, sha, size}; the bytes go to the blob store through ctx.put_blob.
NewEvent workspace_written(const std::string& relative, const std::string& bytes, ToolContext& ctx);

// The workspace folder write_file and edit_file may always write, beside the task's editable files
// (notes, experiments, helper scripts).
inline constexpr const char* kScratchDir = "scratch";

// "" when `tool` may write `path` (relative to the workspace): after lexical normalisation it
// matches one of the task's editable or writable globs (run.created task.files.editable and
// .writable) or lies under kScratchDir/. Otherwise the refusal, naming the path and what may be
// written. A state without a recorded editable list (a hand-built one) allows every path.
std::string write_refusal(const ToolContext& ctx, const std::string& tool, const std::string& path);

inline constexpr size_t kMaxFileBytes = 8 << 20;  // reads and writes above this are refused

}  // namespace marathon
