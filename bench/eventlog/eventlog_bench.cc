// bench_eventlog: durable append rates and open+fold time of the SQLite event log.
//   bench_eventlog [--quick] [--dir DIR]
// Prints a markdown table. Logs are built in DIR (default: a temporary directory) with payloads
// shaped like a real run's: per step a model.request, a model.response (message text and a tool
// call), tool.started / tool.finished (capped output), and every few steps a workspace.written
// (file in a blob), an eval.finished (result with metrics) or a ledger.noted.
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

#include "core/event_store.h"
#include "core/load_state.h"

namespace fs = std::filesystem;
using marathon::EventStore;
using marathon::json;
using marathon::NewEvent;
namespace ev = marathon::ev;
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
  out.push_back(make(ev::kModelRequest, {{"turn", 1 + i / 50},
                                         {"prompt_sha", marathon::sha256_hex(std::to_string(i))},
                                         {"n_messages", 20 + i % 40},
                                         {"tokens_estimate", 12000 + r() % 8000}}));
  json args = {{"path", "kernel.cc"}, {"content", text(r, 400)}};
  out.push_back(make(
      ev::kModelResponse,
      {{"message",
        {{"content", text(r, 800 + r() % 800)},
         {"tool_calls",
          json::array({{{"id", call}, {"name", "write_file"}, {"arguments", args.dump()}}})}}},
       {"usage", {{"prompt_tokens", 15000 + r() % 5000}, {"completion_tokens", 300 + r() % 500}}},
       {"cost_usd", 0.01},
       {"provider", "openai"},
       {"model", "gpt-4o"},
       {"finish_reason", "tool_calls"}}));
  out.push_back(
      make(ev::kToolStarted, {{"call_id", call}, {"name", "write_file"}, {"arguments", args}}));
  out.push_back(make(ev::kToolFinished, {{"call_id", call},
                                         {"name", "write_file"},
                                         {"ok", true},
                                         {"output", text(r, 200 + r() % 1800)},
                                         {"elapsed_s", 0.8}}));
  if (i % 3 == 0) {
    std::string sha = store.put_blob(text(r, 4000) + std::to_string(i));
    out.push_back(
        make(ev::kWorkspaceWritten, {{"path", "kernel.cc"}, {"sha", sha}, {"size", 4000}}));
  }
  if (i % 5 == 0) {
    out.push_back(
        make(ev::kEvalFinished, {{"candidate", marathon::sha256_hex("c" + std::to_string(i))},
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
    out.push_back(make(ev::kLedgerNoted, {{"kind", "finding"}, {"text", text(r, 150)}}));
  return out;
}

// Builds a log of about n_events events; returns the exact count.
int64_t build_log(const std::string& path, int64_t n_events) {
  auto store = EventStore::open(path, EventStore::Mode::kCreate);
  std::mt19937_64 r(42);
  NewEvent created =
      make(ev::kRunCreated,
           {{"run_id", "run-bench"},
            {"task", {{"name", "kda"}}},
            {"goal", {{"objective", "beat FLA"}, {"metric", "speedup"}, {"direction", "max"}}},
            {"budget", {{"max_tool_calls", 100000}}},
            {"config", {{"policy", "llm"}}}});
  store->append(created);
  std::vector<NewEvent> batch;
  for (int64_t i = 0; store->last_seq() + static_cast<int64_t>(batch.size()) < n_events; ++i) {
    for (auto& e : step_events(*store, r, i)) batch.push_back(std::move(e));
    if (batch.size() >= 500) {
      store->append_batch(batch);
      batch.clear();
    }
  }
  if (!batch.empty()) store->append_batch(batch);
  return store->last_seq();
}

struct OpenFold {
  double open_s, fold_s, total_s, cpu_s;
};

OpenFold open_and_fold(const std::string& path) {
  double c0 = cpu_now();
  auto t0 = Clock::now();
  auto store = EventStore::open(path, EventStore::Mode::kReadOnly);
  double open_s = since(t0);
  auto t1 = Clock::now();
  marathon::State s = marathon::load_state(*store);
  double fold_s = since(t1);
  if (s.last_seq == 0) std::fprintf(stderr, "empty fold?\n");
  return {open_s, fold_s, since(t0), cpu_now() - c0};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  fs::path dir;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
  }
  bool own_dir = dir.empty();
  if (own_dir) dir = fs::temp_directory_path() / ("marathon-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);

  std::printf("| measurement | value |\n|---|---|\n");
  {  // one durable append per transaction (a commit, an fsync)
    std::string path = (dir / "single.db").string();
    fs::remove(path);
    auto store = EventStore::open(path, EventStore::Mode::kCreate);
    std::mt19937_64 r(1);
    int n = quick ? 100 : 500;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      store->append(
          make(ev::kToolFinished,
               {{"call_id", std::to_string(i)}, {"ok", true}, {"output", text(r, 1000)}}));
    }
    double s = since(t0);
    std::printf(
        "| durable appends/s, one event per transaction (%d events, ~1 KB) | %.0f (%.2f ms each) "
        "|\n",
        n, n / s, 1000 * s / n);
  }
  for (int batch : {10, 100, 1000}) {  // batched: one transaction per batch
    std::string path = (dir / ("batch" + std::to_string(batch) + ".db")).string();
    fs::remove(path);
    auto store = EventStore::open(path, EventStore::Mode::kCreate);
    std::mt19937_64 r(2);
    int n = quick ? 2000 : 20000;
    std::vector<NewEvent> b;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      b.push_back(make(ev::kToolFinished,
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
    std::string path = (dir / ("log" + std::to_string(n) + ".db")).string();
    fs::remove(path);
    int64_t events = build_log(path, n);
    double mb = static_cast<double>(fs::file_size(path)) / 1e6;
    std::vector<OpenFold> runs;
    for (int i = 0; i < 5; ++i) runs.push_back(open_and_fold(path));
    std::sort(runs.begin(), runs.end(), [](auto& a, auto& b) { return a.total_s < b.total_s; });
    const OpenFold& m = runs[runs.size() / 2];
    std::printf(
        "| open + fold, %lld events (%.1f MB file), median of 5 | %.3f s wall, %.3f s CPU (open "
        "and checks %.3f s, read+fold %.3f s) |\n",
        static_cast<long long>(events), mb, m.total_s, m.cpu_s, m.open_s, m.fold_s);
  }
  if (own_dir) fs::remove_all(dir);
  return 0;
}
