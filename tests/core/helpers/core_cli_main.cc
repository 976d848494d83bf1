// The log commands of marathon (status, log, fork) behind a minimal main, for the core tests.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/usage.h"

namespace marathon::cli {
int exit_code = 0;
}

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("marathon"));
  spdlog::set_pattern("%^%l%$ %v");
  CLI::App app{"marathon (log commands only)"};
  app.require_subcommand(1);
  marathon::cli::register_status(app);
  marathon::cli::register_log(app);
  marathon::cli::register_fork(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return marathon::cli::exit_for_parse_error(app, e);  // as the marathon binary does
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return marathon::cli::exit_code;
}
