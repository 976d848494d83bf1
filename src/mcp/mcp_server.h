// `marathon mcp`: a Model Context Protocol server over stdio (https://modelcontextprotocol.io,
// revisions 2024-11-05 to 2025-11-25): the lifecycle (initialize, notifications/initialized, end of
// input), tools (tools/list, tools/call: mcp_tools.h), resources (the task, the starter files, the
// best candidate), ping, progress notifications for evaluations, resources/list_changed when the
// best candidate changes, and cancellation (notifications/cancelled). docs/mcp.md.
#pragma once

#include "mcp/harness_run.h"

namespace marathon::mcp {

struct McpOptions {
  HarnessOptions harness;
  int in_fd = 0;
  int out_fd = 1;
};

// Opens the run, serves until the input ends, ends the session. Returns the exit code: 0 after a
// clean end of input, 2 when the run cannot be opened (the reason on stderr; nothing served).
int serve_mcp(const McpOptions& options);

}  // namespace marathon::mcp
