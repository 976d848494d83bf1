// marathon serve [--runs DIR] [--port P] [--bind ADDR] [--token T]: the dashboard over the runs
// in DIR (serve/server.h, docs/dashboard.md) until Ctrl-C.
// marathon serve --stdio RUN_DIR...: the control protocol on stdin/stdout (cmd_serve_stdio.cc,
// docs/protocol.md).
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "serve/server.h"

namespace marathon::cli {
namespace {

int do_serve(const serve::ServeOptions& o) {
  // SIGINT and SIGTERM are taken by a watcher thread (blocked before the server's threads exist,
  // so they inherit the mask) and stop the server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::unique_ptr<serve::Dashboard> dashboard;
  try {
    dashboard = std::make_unique<serve::Dashboard>(o);
    dashboard->bind();
  } catch (const std::exception& e) {
    spdlog::error("serve: {}", e.what());
    return 2;
  }
  std::printf("marathon: dashboard of %s at %s\n", o.runs_dir.c_str(), dashboard->url().c_str());
  if (!dashboard->loopback()) {
    std::printf("  bound to %s: every API request needs the token above%s\n", o.bind.c_str(),
                o.token.empty() ? " (generated for this session)" : "");
  }
  std::fflush(stdout);
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    dashboard->stop();
  });
  dashboard->serve();
  // serve() returns after stop(); wake the watcher if the server ended on its own.
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  return 0;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto o = std::make_shared<serve::ServeOptions>();
  auto* cmd = app.add_subcommand("serve", "Serve the live dashboard of the runs in a folder");
  cmd->add_option("--runs", o->runs_dir, "Folder holding the run directories (default runs)");
  cmd->add_option("--port", o->port, "TCP port (default 8765; 0: any free port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--bind", o->bind,
                  "Address to listen on (default 127.0.0.1; any other needs the token)");
  cmd->add_option("--token", o->token,
                  "Token every API request must carry (default: none on loopback, else generated "
                  "and printed)");
  auto run_dirs = std::make_shared<std::vector<std::string>>();
  auto stdio = std::make_shared<bool>(false);
  cmd->add_flag("--stdio", *stdio,
                "Speak the control protocol (JSON-RPC 2.0, one message per line) on stdin/stdout "
                "for the RUN_DIRs instead of serving HTTP");
  cmd->add_option("RUN_DIR", *run_dirs, "Run directories (with --stdio)");
  cmd->footer(
      "Examples:\n"
      "  marathon serve                               the runs in ./runs at "
      "http://127.0.0.1:8765/\n"
      "  marathon serve --runs /data/runs --port 0    any free port (printed)\n"
      "  marathon serve --bind 0.0.0.0 --port 9000    reachable from others; prints a URL with "
      "a token\n"
      "  marathon serve --stdio runs/kda1             JSON-RPC on stdin/stdout "
      "(docs/protocol.md)\n"
      "Ctrl-C stops the server; the runs are only read. docs/dashboard.md");
  cmd->callback([o, run_dirs, stdio] {
    if (*stdio) {
      if (run_dirs->empty()) {
        spdlog::error("serve --stdio: name at least one RUN_DIR");
        exit_code = 2;
        return;
      }
      exit_code = serve_stdio(*run_dirs);
      return;
    }
    if (!run_dirs->empty()) {
      spdlog::error("serve: RUN_DIR arguments go with --stdio; the dashboard takes --runs DIR");
      exit_code = 2;
      return;
    }
    exit_code = do_serve(*o);
  });
}

}  // namespace marathon::cli
