// `run`: a shell command in the workspace, inside the bubblewrap sandbox (see sandbox.h). The model
// sees the exit status and the output capped to its head and tail; the whole output is kept as a
// blob (ToolResult.full_output_sha) when it was capped.
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

struct RunToolOptions {
  double default_timeout_s = 120;
  double max_timeout_s = 1800;
  size_t output_cap = 16 * 1024;  // bytes the model sees
  bool gpu = false;
  std::string bwrap = "bwrap";
};

std::unique_ptr<Tool> make_run_tool(RunToolOptions options = {});

// The capped view of `output`: head and tail halves around a line saying what was left out.
std::string cap_output(const std::string& output, size_t total_bytes, size_t cap,
                       const std::string& blob_sha);

}  // namespace marathon
