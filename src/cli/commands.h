// Each subcommand lives in its own cmd_<name>.cc and registers itself on the CLI11 app here.
// A command's callback returns through `exit_code` (0 ok, 1 failure, 2 usage/input error).
#pragma once

#include <CLI/CLI.hpp>

namespace marathon::cli {

extern int exit_code;

void register_status(CLI::App& app);   // marathon status RUN_DIR [--json]
void register_log(CLI::App& app);      // marathon log RUN_DIR [--follow] [--json]; log export
void register_fork(CLI::App& app);     // marathon fork RUN_DIR --at SEQ --run-dir NEW
void register_replay(CLI::App& app);   // marathon replay RUN_DIR --run-dir NEW
void register_run(CLI::App& app);      // marathon run TASK_DIR ...; marathon resume RUN_DIR
void register_goal(CLI::App& app);     // marathon goal set|edit|pause|resume|clear RUN_DIR [TEXT]
void register_compact(CLI::App& app);  // marathon compact RUN_DIR
void register_eval(CLI::App& app);     // marathon eval TASK_DIR [--candidate DIR] [--json]

}  // namespace marathon::cli
