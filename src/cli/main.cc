// marathon: a durable runtime for long-horizon, measurable optimisation by an agent.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "cli/installation.h"
#include "cli/usage.h"
#include "core/terminal_text.h"

namespace marathon::cli {
int exit_code = 0;
}

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("marathon");
  spdlog::set_default_logger(logger);
  // Messages quote the model, candidates and requests: written through terminal_safe().
  marathon::use_terminal_safe_log_format("%^%l%$ %v");
  if (const char* level = std::getenv("MARATHON_LOG")) {
    spdlog::set_level(spdlog::level::from_str(level));
  }

  CLI::App app{"marathon: durable, long-horizon optimisation runs driven by an agent"};
  app.require_subcommand(1);
  app.set_version_flag("--version", marathon::cli::version_text());
  marathon::cli::adopt_installed_python();
  marathon::cli::register_run(app);
  marathon::cli::register_status(app);
  marathon::cli::register_log(app);
  marathon::cli::register_fork(app);
  marathon::cli::register_replay(app);
  marathon::cli::register_goal(app);
  marathon::cli::register_compact(app);
  marathon::cli::register_eval(app);
  marathon::cli::register_init(app);
  marathon::cli::register_serve(app);
  marathon::cli::register_report(app);
  marathon::cli::register_export(app);
  marathon::cli::register_runs(app);
  marathon::cli::register_stop(app);
  marathon::cli::register_mcp(app);
  // After the subcommands: CLI11 copies a parent's footer into the subcommands made after it.
  app.footer(
      "Start with:\n"
      "  marathon run cpu-matmul                 a search run on the bundled CPU task (no model)\n"
      "  marathon run TASK --model openai:gpt-4o an agent run (key in OPENAI_API_KEY)\n"
      "  marathon COMMAND --help                 a command's flags and examples\n"
      "\n"
      "Exit codes (every command): 0 done; 1 the work failed (evaluator, model, I/O, a run held\n"
      "by another process); 2 usage or input error (unknown command or flag, bad value, missing\n"
      "task or run folder, failed preflight); 130 interrupted by Ctrl-C. docs/operations.md");

  if (std::string unknown = marathon::cli::unknown_command_message(app, argc, argv);
      !unknown.empty()) {
    std::cerr << "marathon: " << unknown << "\n";
    return marathon::cli::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return marathon::cli::exit_for_parse_error(app, e);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return marathon::cli::exit_code;
}
