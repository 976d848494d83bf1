// The dashboard server (`marathon serve`): the page, a JSON API over the runs of one folder,
// server-sent events while runs write, and the control verbs. Routes (docs/dashboard.md):
//
//   GET  /                               the page (Runs, and one run at /#run=ID)
//   GET  /assets/{app.js,style.css,chart.js}
//   GET  /api/runs                       {runs: [row]}
//   GET  /api/runs/ID                    one run with its series (run_json.h's run_detail)
//   GET  /api/runs/ID/events?after=&limit=&types=a,b
//   GET  /api/runs/ID/candidates/HASH    files and diffs of a candidate
//   GET  /api/runs/ID/report             the run's self-contained report (report.h)
//   GET  /api/runs/ID/stream?after=SEQ   server-sent events: `update` (run_json.h's run_update)
//   GET  /api/stream/runs                server-sent events: `runs` (the rows, when they change)
//   POST /api/runs/ID/goal               {verb: set|edit|pause|resume|clear, text}
//   POST /api/runs/ID/compact            {now: bool}
//
// The logs are only read (RunViews); the two POSTs call the CLI's verbs (control/). Every error is
// a JSON body {error} with a 4xx status saying what was wrong: 400 a bad run id or request, 404 no
// such run, candidate or route, 401/403/415 access (access.h), 409 a verb the run cannot take now,
// 413 a body over the limit. Nothing is read from disk but the runs' logs: no path from a request
// reaches the file system.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "serve/access.h"
#include "serve/run_views.h"

namespace httplib {
class Server;
}

namespace marathon::serve {

struct ServeOptions {
  std::filesystem::path runs_dir = "runs";
  std::string bind = "127.0.0.1";
  int port = 8765;                    // 0: any free port
  std::string token;                  // required when set; generated for a non-loopback bind
  size_t max_body_bytes = 64 * 1024;  // larger request bodies get 413
  int threads = 32;                   // requests served at once (each live stream holds one)
  double stream_poll_s = 0.25;        // how often a live stream looks for new events
};

class Dashboard {
 public:
  // Throws std::invalid_argument when the runs folder is not a directory or `bind` is not an
  // address; std::runtime_error when a token is needed and cannot be generated.
  explicit Dashboard(ServeOptions options);
  ~Dashboard();
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  // Binds the address; returns the port. Throws std::runtime_error naming the address and port.
  int bind();
  // Serves until stop() (from another thread or a signal watcher; a stop() before serve() makes it
  // return at once).
  void serve();
  void stop();

  const std::string& token() const { return access_.token; }
  bool loopback() const { return access_.loopback; }
  // The URL to open: http://ADDR:PORT/ (with ?token=... when one is required).
  std::string url() const;

 private:
  void routes();
  ServeOptions options_;
  AccessPolicy access_;
  RunViews views_;
  std::unique_ptr<httplib::Server> server_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> serving_{false};  // serve() was called
  std::atomic<bool> served_{false};   // serve() returned
  int port_ = 0;
};

}  // namespace marathon::serve
