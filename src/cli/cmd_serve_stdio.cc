// `marathon serve --stdio RUN_DIR...`: the control protocol (JSON-RPC 2.0, one message per line)
// on stdin/stdout instead of the dashboard; docs/protocol.md. The `serve` subcommand calls this
// when --stdio is given.
#include "cli/commands.h"
#include "control/control_server.h"

namespace marathon::cli {

int serve_stdio(const std::vector<std::string>& run_dirs) {
  control::ControlOptions o;
  o.run_dirs = run_dirs;
  return control::serve_control(o);
}

}  // namespace marathon::cli
