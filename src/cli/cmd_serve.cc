// marathon serve --stdio RUN_DIR...: serve runs to a client. --stdio speaks the control protocol
// on stdin/stdout (cmd_serve_stdio.cc, docs/protocol.md).
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.h"

namespace marathon::cli {

void register_serve(CLI::App& app) {
  auto run_dirs = std::make_shared<std::vector<std::string>>();
  auto stdio = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("serve", "Serve runs to a client");
  sub->add_option("RUN_DIR", *run_dirs, "Run directories")->required();
  sub->add_flag("--stdio", *stdio,
                "Speak the control protocol (JSON-RPC 2.0, one message per line) on stdin/stdout");
  sub->callback([run_dirs, stdio] {
    if (!*stdio) {
      spdlog::error("serve: only --stdio is available in this build");
      exit_code = 2;
      return;
    }
    exit_code = serve_stdio(*run_dirs);
  });
}

}  // namespace marathon::cli
