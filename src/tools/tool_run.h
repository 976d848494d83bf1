// `run`: a shell command in the workspace, inside the sandbox's `run` profile (sandbox/launcher.h:
// no network, the system and the Python environment read-only, only the workspace and a private
// /tmp writable, its own PID namespace). The model sees the exit status and the output capped to
// its head and tail; when that view left something out, the output as stored (its first and last
// `stored_head`/`stored_tail` bytes and its total size) is kept as a blob
// (ToolResult.full_output_sha).
#pragma once

#include <memory>
#include <optional>

#include "sandbox/launcher.h"
#include "tools/tool.h"

namespace marathon {

struct RunToolOptions {
  double default_timeout_s = 120;
  double max_timeout_s = 1800;
  size_t output_cap = 16 * 1024;   // bytes the model sees
  size_t stored_head = 32 * 1024;  // bytes of the output ever kept: its first ...
  size_t stored_tail = 32 * 1024;  // ... and its last
  bool gpu = false;
  std::string bwrap = "bwrap";
  std::optional<sandbox::Isolation> isolation;  // default: sandbox::default_isolation()
};

std::unique_ptr<Tool> make_run_tool(RunToolOptions options = {});

// The capped view of `output` (which may itself be a head and tail of `total_bytes`): head and
// tail halves around a line saying what was left out and where the kept output is (`blob_whole`:
// the blob holds all of it, else its head and tail).
std::string cap_output(const std::string& output, size_t total_bytes, size_t cap,
                       const std::string& blob_sha, bool blob_whole = true);

}  // namespace marathon
