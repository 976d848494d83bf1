// Each subcommand lives in its own cmd_<name>.cc and registers itself on the CLI11 app here.
// A command's callback returns through `exit_code` (0 ok, 1 failure, 2 usage/input error).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace marathon::cli {

extern int exit_code;

// The capability probe of `run`, `resume` and `eval`, before anything starts: whether bubblewrap
// can build the sandbox here. Without it, the command refuses (ok = false, the reason and how to
// enable it logged) unless `unsafe_no_sandbox`; then the process runs every launch unsandboxed
// (still with a cleared environment and the process group killed) and `reason` says why, for the
// sandbox.disabled event.
struct SandboxGate {
  bool ok = true;
  bool unsandboxed = false;
  std::string reason;
};
SandboxGate sandbox_gate(bool unsafe_no_sandbox, const std::string& command);
inline constexpr const char* kUnsafeNoSandboxHelp =
    "Run the model's commands and the evaluator without the bubblewrap sandbox (when it cannot be "
    "built here: no user namespaces, no bwrap). Unsafe: they can then read your files, reach the "
    "network and outlive the run; only the environment is still cleared. Logged in the run.";

void register_status(CLI::App& app);   // marathon status RUN_DIR [--json]
void register_log(CLI::App& app);      // marathon log RUN_DIR [--follow] [--json]; log export
void register_fork(CLI::App& app);     // marathon fork RUN_DIR --at SEQ --run-dir NEW
void register_replay(CLI::App& app);   // marathon replay RUN_DIR --run-dir NEW
void register_run(CLI::App& app);      // marathon run TASK_DIR ...; marathon resume RUN_DIR
void register_goal(CLI::App& app);     // marathon goal set|edit|pause|resume|clear RUN_DIR [TEXT]
void register_compact(CLI::App& app);  // marathon compact RUN_DIR
void register_eval(CLI::App& app);     // marathon eval TASK_DIR [--candidate DIR] [--json]
void register_init(CLI::App& app);     // marathon init TASK_DIR --repo PATH --metric CMD ...
void register_serve(CLI::App& app);    // marathon serve [--runs DIR] [--port P] [--bind ADDR]
void register_report(CLI::App& app);   // marathon report RUN_DIR -o FILE
void register_runs(CLI::App& app);     // marathon runs [DIR] [--json]
void register_stop(CLI::App& app);     // marathon stop RUN_DIR [REASON]
void register_mcp(CLI::App& app);      // marathon mcp --task TASK_DIR [--run-dir D]
void register_export(CLI::App& app);   // marathon export RUN_DIR [--best|--candidate ID] -o DIR

// The control protocol on stdin/stdout for `serve --stdio` (docs/protocol.md); the exit code.
int serve_stdio(const std::vector<std::string>& run_dirs);

}  // namespace marathon::cli
