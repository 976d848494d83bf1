// bench_eventlog: durable append rates and open+fold time of the SQLite event log, with and
// without fold checkpoints.
//   bench_eventlog [--quick] [--dir DIR] [--fold-only]
// Prints a markdown table. Logs are built in DIR (default: a temporary directory) with payloads
// shaped like a real run's: per step a model.request, a model.response (message text and a tool
// call), tool.started / tool.finished (capped output), and every few steps a workspace.written
// (file in a blob), an eval.finished (result with metrics) or a ledger.noted. The checkpointed log
// is written the way a runner writes one: the state folded as events are appended, and
// maybe_write_checkpoint(store, state, 1000) after each append.
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/checkpoint.h"
#include "core/event_store.h"
#include "core/load_state.h"

namespace fs = std::filesystem;
using marathon::EventStore;
using marathon::json;
using marathon::NewEvent;
namespace events = marathon::events;
using Clock = std::chrono::steady_clock;

namespace {

// CPU seconds of this process (on a shared machine the honest measure next to wall time).
double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string text(std::mt19937_64& r, size_t n) {
  static const char kWords[][12] = {
      "the ", "kernel ", "tile ", "load ", "store ", "warp ",  "block ", "shared ", "memory ",
      "= ",   "for ",    "(i ",   "+= ",   "acc;\n", "float ", "128 ",   "64 ",     "bandwidth "};
  std::string s;
  while (s.size() < n) s += kWords[r() % (sizeof kWords / sizeof kWords[0])];
  s.resize(n);
  return s;
}

NewEvent make(const char* type, json payload) {
  NewEvent e;
  e.type = type;
  e.payload = std::move(payload);
  return e;
}

// The events of step `i` of a realistic run (about 4-6 events, about 5 KB of payload in all).
std::vector<NewEvent> step_events(EventStore& store, std::mt19937_64& r, int64_t i) {
  std::vector<NewEvent> out;
  std::string call = "call_" + std::to_string(i);
  out.push_back(
      make(events::ModelRequest::kType, {{"turn", 1 + i / 50},
                                         {"prompt_sha", marathon::sha256_hex(std::to_string(i))},
                                         {"n_messages", 20 + i % 40},
                                         {"tokens_estimate", 12000 + r() % 8000}}));
  json args = {{"path", "kernel.cc"}, {"content", text(r, 400)}};
  out.push_back(make(
      events::ModelResponse::kType,
      {{"message",
        {{"content", text(r, 800 + r() % 800)},
         {"tool_calls",
          json::array({{{"id", call}, {"name", "write_file"}, {"arguments", args.dump()}}})}}},
       {"usage", {{"prompt_tokens", 15000 + r() % 5000}, {"completion_tokens", 300 + r() % 500}}},
       {"cost_usd", 0.01},
       {"provider", "openai"},
       {"model", "gpt-4o"},
       {"finish_reason", "tool_calls"}}));
  out.push_back(make(events::ToolStarted::kType,
                     {{"call_id", call}, {"name", "write_file"}, {"arguments", args}}));
  out.push_back(make(events::ToolFinished::kType, {{"call_id", call},
                                                   {"name", "write_file"},
                                                   {"ok", true},
                                                   {"output", text(r, 200 + r() % 1800)},
                                                   {"elapsed_s", 0.8}}));
  if (i % 3 == 0) {
    std::string sha = store.put_blob(text(r, 4000) + std::to_string(i));
    out.push_back(make(events::WorkspaceWritten::kType,
                       {{"path", "kernel.cc"}, {"sha", sha}, {"size", 4000}}));
  }
  if (i % 5 == 0) {
    out.push_back(make(events::EvalFinished::kType,
                       {{"candidate", marathon::sha256_hex("c" + std::to_string(i))},
                        {"cache_key", marathon::sha256_hex("k" + std::to_string(i))},
                        {"cached", false},
                        {"status", "ok"},
                        {"result",
                         {{"correct", r() % 4 != 0},
                          {"score", 1.0 + double(r() % 1000) / 300},
                          {"metrics", {{"speedup", 1.5}, {"ms", 0.42}, {"bw_frac", 0.61}}},
                          {"details", json::array({{{"shape", "B1 T8192"}, {"ms", 0.4}},
                                                   {{"shape", "B4 T4096"}, {"ms", 0.5}}})},
                          {"violations", json::array()},
                          {"log", text(r, 300)}}},
                        {"elapsed_s", 12.0},
                        {"gpu_s", 9.5},
                        {"strategy", text(r, 120)}}));
  }
  if (i % 7 == 0)
    out.push_back(make(events::LedgerNoted::kType, {{"kind", "finding"}, {"text", text(r, 150)}}));
  return out;
}

struct Built {
  int64_t events = 0;
  int checkpoints = 0;          // checkpoints written while building
  double checkpoint_s = 0;      // total wall time of those writes
  double checkpoint_max_s = 0;  // the slowest one
  size_t checkpoint_bytes = 0;  // state JSON of the last one
};

// Builds a log of about n_events events. With checkpoint_every > 0 the state is folded as events
// are appended (as the runner does) and maybe_write_checkpoint is called after each append.
Built build_log(const std::string& path, int64_t n_events, int64_t checkpoint_every) {
  auto store = EventStore::open(path, EventStore::Mode::kCreate);
  std::mt19937_64 r(42);
  NewEvent created =
      make(events::RunCreated::kType,
           {{"run_id", "run-bench"},
            {"task", {{"name", "kda"}}},
            {"goal", {{"objective", "beat FLA"}, {"metric", "speedup"}, {"direction", "max"}}},
            {"budget", {{"max_tool_calls", 100000}}},
            {"config", {{"policy", "llm"}}}});
  Built b;
  marathon::State state;
  auto append = [&](const std::vector<NewEvent>& batch) {
    for (const auto& e : store->append_batch(batch)) {
      if (checkpoint_every > 0) marathon::apply(state, e);
    }
    if (checkpoint_every <= 0) return;
    auto t0 = Clock::now();
    if (marathon::maybe_write_checkpoint(*store, state, checkpoint_every)) {
      double s = since(t0);
      b.checkpoints += 1;
      b.checkpoint_s += s;
      b.checkpoint_max_s = std::max(b.checkpoint_max_s, s);
    }
  };
  append({created});
  // Appends of about 100 events: a checkpoint lands within 100 events of each multiple.
  std::vector<NewEvent> batch;
  for (int64_t i = 0; store->last_seq() + static_cast<int64_t>(batch.size()) < n_events; ++i) {
    for (auto& e : step_events(*store, r, i)) batch.push_back(std::move(e));
    if (batch.size() >= 100) {
      append(batch);
      batch.clear();
    }
  }
  if (!batch.empty()) append(batch);
  b.events = store->last_seq();
  store->for_each_checkpoint(marathon::kFoldVersion, INT64_MAX, [&](const auto& c) {
    b.checkpoint_bytes = c.state.size();
    return false;
  });
  return b;
}

struct OpenFold {
  double open_s, fold_s, total_s, cpu_s;
  marathon::LoadStats stats;
};

OpenFold open_and_fold(const std::string& path, bool use_checkpoints) {
  double c0 = cpu_now();
  auto t0 = Clock::now();
  auto store = EventStore::open(path, EventStore::Mode::kReadOnly);
  double open_s = since(t0);
  auto t1 = Clock::now();
  marathon::LoadOptions o;
  o.use_checkpoints = use_checkpoints;
  OpenFold r{};
  marathon::State s = marathon::load_state(*store, INT64_MAX, o, &r.stats);
  r.fold_s = since(t1);
  if (s.last_seq == 0) std::fprintf(stderr, "empty fold?\n");
  r.open_s = open_s;
  r.total_s = since(t0);
  r.cpu_s = cpu_now() - c0;
  return r;
}

OpenFold median_of_5(const std::string& path, bool use_checkpoints) {
  std::vector<OpenFold> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(open_and_fold(path, use_checkpoints));
  std::sort(runs.begin(), runs.end(), [](auto& a, auto& b) { return a.total_s < b.total_s; });
  return runs[runs.size() / 2];
}

void corrupt_newest_checkpoint(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db,
               "UPDATE checkpoints SET checksum = checksum + 1 WHERE seq = (SELECT max(seq) FROM "
               "checkpoints)",
               nullptr, nullptr, nullptr);
  sqlite3_close(db);
}

void print_fold(const char* what, int64_t events, double mb, const OpenFold& m,
                const OpenFold* baseline) {
  std::printf(
      "| open + fold, %lld events (%.1f MB file), %s, median of 5 | %.3f s wall, %.3f s CPU (open "
      "and checks %.3f s, load %.3f s; from checkpoint at seq %lld, %lld events folded)",
      static_cast<long long>(events), mb, what, m.total_s, m.cpu_s, m.open_s, m.fold_s,
      static_cast<long long>(m.stats.checkpoint_seq),
      static_cast<long long>(m.stats.events_folded));
  if (baseline) {
    std::printf("; %.1fx faster than the full fold (wall), %.1fx (CPU)",
                baseline->total_s / m.total_s, baseline->cpu_s / m.cpu_s);
  }
  std::printf(" |\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, fold_only = false;
  fs::path dir;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--fold-only")) fold_only = true;
    if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
  }
  bool own_dir = dir.empty();
  if (own_dir) dir = fs::temp_directory_path() / ("marathon-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);

  std::printf("| measurement | value |\n|---|---|\n");
  if (!fold_only) {  // one durable append per transaction (a commit, an fsync)
    std::string path = (dir / "single.db").string();
    fs::remove(path);
    auto store = EventStore::open(path, EventStore::Mode::kCreate);
    std::mt19937_64 r(1);
    int n = quick ? 100 : 500;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      store->append(
          make(events::ToolFinished::kType,
               {{"call_id", std::to_string(i)}, {"ok", true}, {"output", text(r, 1000)}}));
    }
    double s = since(t0);
    std::printf(
        "| durable appends/s, one event per transaction (%d events, ~1 KB) | %.0f (%.2f ms each) "
        "|\n",
        n, n / s, 1000 * s / n);
  }
  for (int batch : {10, 100, 1000}) {  // batched: one transaction per batch
    if (fold_only) break;
    std::string path = (dir / ("batch" + std::to_string(batch) + ".db")).string();
    fs::remove(path);
    auto store = EventStore::open(path, EventStore::Mode::kCreate);
    std::mt19937_64 r(2);
    int n = quick ? 2000 : 20000;
    std::vector<NewEvent> b;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      b.push_back(make(events::ToolFinished::kType,
                       {{"call_id", std::to_string(i)}, {"ok", true}, {"output", text(r, 1000)}}));
      if (static_cast<int>(b.size()) == batch) {
        store->append_batch(b);
        b.clear();
      }
    }
    double s = since(t0);
    std::printf("| durable appends/s, batches of %d (%d events, ~1 KB) | %.0f |\n", batch, n,
                n / s);
  }
  for (int64_t n : {int64_t(10000), int64_t(100000)}) {
    if (quick && n > 10000) break;
    // The full fold: a log without checkpoints, every event read, verified, parsed and applied.
    std::string path = (dir / ("log" + std::to_string(n) + ".db")).string();
    fs::remove(path);
    Built plain = build_log(path, n, 0);
    OpenFold full = median_of_5(path, false);
    print_fold("full fold (no checkpoint)", plain.events, double(fs::file_size(path)) / 1e6, full,
               nullptr);
    fs::remove(path);

    // The same events with checkpoints every 1000 events, written as the log was built.
    std::string cpath = (dir / ("ckpt" + std::to_string(n) + ".db")).string();
    fs::remove(cpath);
    Built ck = build_log(cpath, n, marathon::kCheckpointEvery);
    double mb = double(fs::file_size(cpath)) / 1e6;
    std::printf(
        "| checkpoints written while building the %lld-event log (every %lld events) | %d, %.1f "
        "ms each on average, %.1f ms at most; the last one %.2f MB of state JSON |\n",
        static_cast<long long>(ck.events), static_cast<long long>(marathon::kCheckpointEvery),
        ck.checkpoints, 1000 * ck.checkpoint_s / std::max(1, ck.checkpoints),
        1000 * ck.checkpoint_max_s, double(ck.checkpoint_bytes) / 1e6);
    OpenFold full_same = median_of_5(cpath, false);
    print_fold("same log, checkpoints ignored", ck.events, mb, full_same, nullptr);
    OpenFold with = median_of_5(cpath, true);
    print_fold("from the newest checkpoint", ck.events, mb, with, &full_same);
    corrupt_newest_checkpoint(cpath);
    OpenFold fallback = median_of_5(cpath, true);
    print_fold("newest checkpoint damaged: the one before", ck.events, mb, fallback, &full_same);
    fs::remove(cpath);
  }
  if (own_dir) fs::remove_all(dir);
  return 0;
}
