// File reads and writes for the workspace tools, with errors as text, and the workspace.written
// event a write implies.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/event.h"
#include "tools/tool.h"

namespace marathon {

// The whole file, or nullopt with `error` set ("no such file", "is a directory", "larger than").
std::optional<std::string> read_whole_file(const std::filesystem::path& path, size_t max_bytes,
                                           std::string* error);

// Creates parent directories, then writes without following a symlink at the final component.
bool write_whole_file(const std::filesystem::path& path, const std::string& bytes,
                      std::string* error);

// A NUL byte in the first 8 KiB.
bool looks_binary(const std::string& bytes);

// workspace.written {path, sha, size}; the bytes go to the blob store through ctx.put_blob.
NewEvent workspace_written(const std::string& relative, const std::string& bytes, ToolContext& ctx);

inline constexpr size_t kMaxFileBytes = 8 << 20;  // reads and writes above this are refused

}  // namespace marathon
