// The command line's conventions, shared by every subcommand: one table of exit codes
// (docs/operations.md, "Exit codes"), usage errors as exit 2 with a "did you mean" for a mistyped
// command, and the check every RUN_DIR argument gets before a command runs.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace marathon::cli {

// The exit codes of every command.
inline constexpr int kExitOk = 0;       // done (a run finished or paused; a verdict given)
inline constexpr int kExitFailure = 1;  // the work failed (evaluator, model, I/O, a held lock)
inline constexpr int kExitUsage = 2;    // usage or input error, a refused preflight
inline constexpr int kExitInterrupted = 130;  // stopped by Ctrl-C (SIGINT)

// The name of `names` closest to `word` (edit distance at most a third of the longer, at least 1;
// or `word` a prefix of exactly one name); "" when none is close.
std::string closest_name(const std::string& word, const std::vector<std::string>& names);

// When the words of argv (after the program) name a subcommand that does not exist where one is
// expected (e.g. `marathon stat`, `marathon goal sett`), the error line to print:
// "unknown command 'stat'; did you mean 'status'?". "" when every command word is known.
std::string unknown_command_message(CLI::App& app, int argc, const char* const* argv);

// What a CLI11 parse error becomes: --help and --version print and exit 0; every other one prints
// the error and the usage hint on stderr and exits kExitUsage. A missing subcommand prints the
// help of the command that needs one.
int exit_for_parse_error(CLI::App& app, const CLI::ParseError& e);

// The check of a RUN_DIR argument (an existing run directory with an events.db), so that every
// command refuses a missing or foreign folder the same way, exit 2, before it starts.
CLI::Validator existing_run_dir_check();

}  // namespace marathon::cli
