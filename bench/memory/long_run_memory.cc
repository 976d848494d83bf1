// bench/memory: the runner's memory over a long run, and how long resuming that run takes.
//
// A scripted run of CALLS tool calls (default 10,000) on the tiny task in a 32k-token window, so
// that compaction keeps the prompt bounded and what grows is only what the runner keeps of the
// log. Each turn the policy answers at once with one `read_file` call (with --notes: one `note`
// call, each of which the state's ledger keeps, so the state itself grows by about 0.6 KB a call);
// asked for a summary (a request without tools) it writes one. At every 1,000th call it prints the
// process's resident memory now (VmRSS) and at its peak so far (VmHWM), and the peak's ratio to the
// peak at call 1,000 (issue 20 asks for at most 1.3 at call 10,000). Then it runs itself again on
// the finished log (a fresh process) and times what a resume does before its first step: open the
// log and construct the Runner (fold, turn tracker, prompt cache), with that process's peak memory.
//
//   bench_memory [CALLS] [--notes] the run, then the resume in a child process
//   bench_memory --resume RUN_DIR  the resume alone (what the child does)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "goal/task_spec.h"
#include "loop/run_setup.h"
#include "loop/run_tools.h"
#include "loop/runner.h"

namespace fs = std::filesystem;
using namespace marathon;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM").
long status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return -1;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// A turn asks for one `note`; a summary request (no tools) gets a summary of about 1.5 KB.
class ScriptedPolicy : public Policy {
 public:
  explicit ScriptedPolicy(bool notes = false) : notes_(notes) {}
  std::string name() const override { return "bench"; }
  PolicyReply next(const PolicyRequest& req) override {
    PolicyReply r;
    r.provider = "bench";
    r.model = "scripted";
    r.completion_tokens = 40;
    r.prompt_tokens = 8000;
    if (req.tools.empty()) {
      std::string text = "Summary " + std::to_string(++summaries_) +
                         ": tiled 64x64, unrolled by 4; the blocked variant is best so far. ";
      while (text.size() < 1500) text += "Each note so far recorded a blocking factor. ";
      r.message = {{"role", "assistant"}, {"content", text}};
      return r;
    }
    std::string args = notes_ ? R"({"kind": "finding", "text": "step )" + std::to_string(n_) +
                                    R"(: BLOCK_K=64 beats 32 by 4% at n=512; )" +
                                    std::string(300, 'x') + R"("})"
                              : std::string(R"({"path": "solution.txt"})");
    r.message = {
        {"role", "assistant"},
        {"content", "Trying the next blocking factor; the last one lost to cache misses."},
        {"tool_calls",
         {{{"id", "call_" + std::to_string(n_)},
           {"type", "function"},
           {"function", {{"name", notes_ ? "note" : "read_file"}, {"arguments", args}}}}}}};
    ++n_;
    return r;
  }

 private:
  bool notes_;
  int n_ = 0;
  int summaries_ = 0;
};

// Prints the memory at every 1,000th finished tool call: the resident set (VmRSS) and its peak
// (VmHWM), and the resident set split into the process's own memory (RssAnon, with its peak
// sampled at every finished call) and pages of mapped files (RssFile: the event log, which SQLite
// reads through mmap, and the binary).
class MemoryProbe : public ProgressSink {
 public:
  void on_event(const Event& e, const State& s) override {
    if (!is<events::ToolFinished>(e)) return;
    const long anon = status_kib("RssAnon");
    anon_peak = std::max(anon_peak, anon);
    if (s.used.tool_calls % 1000 != 0) return;
    long rss = status_kib("VmRSS"), hwm = status_kib("VmHWM");
    if (s.used.tool_calls == 1000) hwm_at_1000 = hwm, anon_peak_at_1000 = anon_peak;
    std::printf(
        "call %6lld  events %7lld  rss %7ld KiB  peak %7ld KiB  peak/peak@1000 %.3f  anon %7ld "
        "KiB  anon peak %7ld KiB  anon peak/anon peak@1000 %.3f  file %7ld KiB  (%.0f s)\n",
        static_cast<long long>(s.used.tool_calls), static_cast<long long>(s.last_seq), rss, hwm,
        hwm_at_1000 > 0 ? double(hwm) / double(hwm_at_1000) : 0.0, anon, anon_peak,
        anon_peak_at_1000 > 0 ? double(anon_peak) / double(anon_peak_at_1000) : 0.0,
        status_kib("RssFile"), seconds_since(t0));
    std::fflush(stdout);
  }
  long anon_peak = 0;
  long anon_peak_at_1000 = 0;
  long hwm_at_1000 = 0;
  Clock::time_point t0 = Clock::now();
};

int resume(const fs::path& run_dir) {
  long hwm_before = status_kib("VmHWM");
  auto t0 = Clock::now();
  auto store = EventStore::open((run_dir / "events.db").string(), EventStore::Mode::kOpen);
  ToolRegistry tools = make_run_tools();
  ScriptedPolicy policy;
  Runner runner(*store, policy, tools, run_dir, RunnerHooks{});
  double s = seconds_since(t0);
  std::printf(
      "resume: open the log and construct the runner: %.3f s, %lld events in the log; from the "
      "checkpoint at seq %lld, %lld events folded after it, %lld read into memory; peak %ld KiB "
      "(%ld KiB before opening)\n",
      s, static_cast<long long>(runner.state().last_seq),
      static_cast<long long>(runner.stats().checkpoint_seq),
      static_cast<long long>(runner.stats().events_folded_at_start),
      static_cast<long long>(runner.stats().events_read_at_start), status_kib("VmHWM"), hwm_before);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "--resume") return resume(argv[2]);
  int calls = argc > 1 ? std::atoi(argv[1]) : 10000;
  const bool notes = argc > 2 && std::string(argv[2]) == "--notes";
  std::random_device rd;
  fs::path dir = fs::temp_directory_path() / ("marathon-bench-memory-" + std::to_string(rd()));
  NewRunOptions o;
  o.run_dir = dir / "run";
  o.policy = "llm";
  o.model = "bench:scripted";
  o.max_tool_calls = calls;
  o.context_window = 32000;
  std::printf("load average at start: %s\n", load_average().c_str());
  fs::create_directories(dir);
  auto store =
      create_run(load_task(fs::path(MARATHON_SOURCE_DIR) / "tests/loop/fixtures/tiny-task"), o);
  ToolRegistry tools = make_run_tools();
  ScriptedPolicy policy(notes);
  MemoryProbe probe;
  RunnerHooks hooks;
  hooks.progress = &probe;
  long hwm_start = status_kib("VmHWM");
  auto t0 = Clock::now();
  RunReport report;
  {
    Runner runner(*store, policy, tools, o.run_dir, hooks);
    report = runner.run();
    std::printf(
        "run: %lld tool calls (%s), %lld events in %.1f s; peak %ld KiB (%ld KiB at start)\n",
        static_cast<long long>(runner.state().used.tool_calls), report.reason.c_str(),
        static_cast<long long>(runner.state().last_seq), seconds_since(t0), status_kib("VmHWM"),
        hwm_start);
  }
  store.reset();
  std::fflush(stdout);
  std::string cmd =
      "/proc/" + std::to_string(getpid()) + "/exe --resume '" + o.run_dir.string() + "'";
  int rc = std::system(cmd.c_str());
  std::printf("load average at the end: %s\n", load_average().c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return rc == 0 ? 0 : 1;
}
