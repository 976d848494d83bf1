// marathon log RUN_DIR [--follow] [--json] [--from SEQ]: print a run's events (JSONL with --json);
// --follow keeps polling the log while the run writes and stops at run.finished or on SIGINT.
// marathon log export RUN_DIR -o FILE [--format jsonl|msp]: write the whole log to a file.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/usage.h"
#include "core/event_store.h"
#include "core/events.h"
#include "core/log_export.h"
#include "core/run_dir.h"
#include "core/terminal_text.h"

namespace marathon::cli {
namespace {

struct LogOptions {
  std::string run_dir;
  bool follow = false;
  bool json = false;
  int64_t from = 1;
  double poll_s = 0.2;
};

struct ExportOptions {
  std::string run_dir;
  std::string out;
  std::string format = "jsonl";
};

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

// Restores the previous SIGINT handler when it goes out of scope.
class SigintGuard {
 public:
  SigintGuard() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
  }
  ~SigintGuard() { sigaction(SIGINT, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

std::string human_line(const Event& e) {
  std::string payload = payload_preview(e, 160);
  // HH:MM:SS.mmm of the RFC 3339 time.
  std::string t = format_rfc3339_us(e.recorded_at_us).substr(11, 12);
  return terminal_safe(fmt::format("{:>7}  {}  {:<22} {}", e.seq, t, e.type, payload));
}

std::unique_ptr<EventStore> open_log(const std::string& run_dir) {
  RunDir dir = existing_run_dir(run_dir);
  return EventStore::open(dir.events_db().string(), EventStore::Mode::kReadOnly);
}

int run_log(const LogOptions& o) {
  if (o.run_dir.empty()) {
    spdlog::error("log: RUN_DIR is required");
    return 2;
  }
  try {
    auto store = open_log(o.run_dir);
    SigintGuard guard;
    g_interrupted = 0;
    int64_t next = std::max<int64_t>(1, o.from);
    for (;;) {
      bool finished = false;
      store->for_each(next, [&](const Event& e) {
        std::cout << (o.json ? to_json(e).dump(-1, ' ', false, json::error_handler_t::replace)
                             : human_line(e))
                  << '\n';
        next = e.seq + 1;
        finished = is<events::RunFinished>(e);
        return !(o.follow && finished) && !g_interrupted;
      });
      std::cout.flush();
      if (!o.follow || finished || g_interrupted) break;
      auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.poll_s);
      while (!g_interrupted && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (g_interrupted) break;
    }
    return 0;
  } catch (const StoreError& e) {
    spdlog::error("log: {}", e.what());
    return 1;
  }
}

int run_export(const ExportOptions& o) {
  try {
    auto store = open_log(o.run_dir);
    std::string run_id = store->meta("run_id").value_or("");
    std::ofstream file;
    std::ostream* out = &std::cout;
    if (o.out != "-") {
      file.open(o.out, std::ios::binary | std::ios::trunc);
      if (!file) {
        spdlog::error("log export: cannot write {}", o.out);
        return 1;
      }
      out = &file;
    }
    int64_t n = 0;
    store->for_each(1, [&](const Event& e) {
      json j = o.format == "msp" ? to_msp(e, run_id) : to_json(e);
      *out << j.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
      ++n;
      return true;
    });
    out->flush();
    if (!*out) {
      spdlog::error("log export: writing {} failed", o.out);
      return 1;
    }
    if (o.out != "-") spdlog::info("exported {} events to {} ({})", n, o.out, o.format);
    return 0;
  } catch (const StoreError& e) {
    spdlog::error("log export: {}", e.what());
    return 1;
  }
}

}  // namespace

void register_log(CLI::App& app) {
  auto o = std::make_shared<LogOptions>();
  auto* cmd = app.add_subcommand("log", "Print a run's events (add --follow to watch a live run)");
  cmd->add_option("RUN_DIR", o->run_dir, "The run directory (holds events.db)")
      ->check(existing_run_dir_check());
  cmd->add_flag("--follow,-f", o->follow, "Keep printing new events until run.finished or Ctrl-C");
  cmd->add_flag("--json", o->json, "One JSON object per line");
  cmd->add_option("--from", o->from, "First seq to print")->check(CLI::PositiveNumber);
  cmd->add_option("--poll", o->poll_s, "Seconds between polls with --follow")
      ->check(CLI::Range(0.01, 60.0));

  auto e = std::make_shared<ExportOptions>();
  auto* exp = cmd->add_subcommand("export", "Write a run's whole log to a file");
  exp->add_option("RUN_DIR", e->run_dir, "The run directory")
      ->required()
      ->check(existing_run_dir_check());
  exp->add_option("-o,--output", e->out, "Output file ('-' for stdout)")->required();
  exp->add_option(
         "--format", e->format,
         "jsonl (one event per line as `log --json` prints it) or msp (one record per line in the "
         "envelope the control protocol serves: schema_version, id, stream, sequence, "
         "recorded_at, record_type, payload_type, payload; docs/protocol.md)")
      ->check(CLI::IsMember({"jsonl", "msp"}));
  exp->callback([e] { exit_code = run_export(*e); });

  cmd->callback([o, exp] {
    if (exp->parsed()) return;
    exit_code = run_log(*o);
  });
}

}  // namespace marathon::cli
