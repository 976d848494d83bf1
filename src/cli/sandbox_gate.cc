// The sandbox gate shared by `run`, `resume` and `eval` (commands.h).
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "sandbox/launcher.h"

namespace marathon::cli {

SandboxGate sandbox_gate(bool unsafe_no_sandbox, const std::string& command) {
  SandboxGate g;
  std::string why = sandbox::sandbox_unavailable_reason();
  if (!unsafe_no_sandbox) {
    if (!why.empty()) {
      spdlog::error("marathon {} refuses to start: {}", command, why);
      g.ok = false;
    }
    return g;
  }
  sandbox::allow_unsandboxed();
  g.unsandboxed = true;
  g.reason = why.empty() ? "requested with --unsafe-no-sandbox (the sandbox was available)"
                         : "--unsafe-no-sandbox: " + why;
  spdlog::warn(
      "--unsafe-no-sandbox: the model's commands and the evaluator run WITHOUT the sandbox: they "
      "can read and write your files, reach the network and outlive the run (only the "
      "environment is cleared)");
  return g;
}

}  // namespace marathon::cli
