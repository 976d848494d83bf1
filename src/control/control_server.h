// The control protocol server (`marathon serve --stdio RUN_DIR...`): JSON-RPC 2.0 over stdio, one
// message per line, driving and watching runs with the same code as the CLI verbs. The methods,
// params, results, notifications and error codes are specified in docs/protocol.md.
#pragma once

#include <string>
#include <vector>

namespace marathon::control {

struct ControlOptions {
  std::vector<std::string> run_dirs;
  int in_fd = 0;
  int out_fd = 1;
  double poll_s = 0.1;  // how often subscriptions look for new events
};

// Serves until the input ends (or the output is closed). Returns the process exit code: 0 after a
// clean end of input, 2 when a RUN_DIR is not a run directory (nothing is served then).
int serve_control(const ControlOptions& options);

}  // namespace marathon::control
