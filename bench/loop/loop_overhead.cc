// bench/loop: the runtime's own overhead per step, excluding model and evaluator time.
//
// A step is one model turn and the tool call it asks for: budget checks, compaction planning and
// prompt assembly (context module), model.request, the policy call, model.response (durable
// append), argument validation, tool.started, the tool, tool.finished + effects (durable append).
// The policy answers at once (a scripted model: no HTTP, no tokens to wait for) and the tool is
// `note`, so what is measured is the runtime. The time inside policy.next() and Tool::run() is
// measured and subtracted. Output: mean and p50/p99 per step over the run, by phase of the run
// (the cost grows with the log, so the last steps matter most). Baseline, measured in the same run
// on the same disk: one durable single-event append (the fsync dominates it); the overhead per
// step is also given in those units, which the disk's other load affects much less than ms.
//
//   bench_loop [STEPS]   (default 1000)
#include <algorithm>
#include <chrono>
#include <cstdio>
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

// Every turn asks for one `note`; the replies look like a model's (a sentence of text, a call).
class InstantPolicy : public Policy {
 public:
  std::string name() const override { return "bench"; }
  PolicyReply next(const PolicyRequest& req) override {
    auto t0 = Clock::now();
    PolicyReply r;
    r.message = {{"role", "assistant"},
                 {"content", "Trying the next blocking factor; the last one lost to cache misses."},
                 {"tool_calls",
                  {{{"id", "call_" + std::to_string(n_)},
                    {"type", "function"},
                    {"function",
                     {{"name", "note"},
                      {"arguments", R"({"kind": "finding", "text": "step )" + std::to_string(n_) +
                                        R"(: BLOCK_K=64 beats 32 by 4% at n=512"})"}}}}}}};
    r.prompt_tokens = 1000 + 30 * n_;
    r.completion_tokens = 40;
    r.provider = "bench";
    r.model = "instant";
    ++n_;
    prompt_messages = req.messages.size();
    policy_s += seconds_since(t0);
    return r;
  }
  double policy_s = 0;
  size_t prompt_messages = 0;

 private:
  int n_ = 0;
};

class StepClock : public ProgressSink {
 public:
  void on_event(const Event& e, const State&) override {
    if (e.type != events::ToolFinished::kType) return;
    auto now = Clock::now();
    steps.push_back(std::chrono::duration<double>(now - last).count());
    last = now;
  }
  Clock::time_point last = Clock::now();
  std::vector<double> steps;
};

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// Mean seconds of one durable append of a small event (its own transaction) to a fresh log.
double durable_append_s(const fs::path& dir, int n) {
  auto store = EventStore::open((dir / "baseline.db").string(), EventStore::Mode::kCreate);
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    store->append({events::LedgerNoted::kType,
                   {{"kind", "finding"}, {"text", "baseline " + std::to_string(i)}}});
  }
  return seconds_since(t0) / n;
}

double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 1000;
  std::random_device rd;
  fs::path dir = fs::temp_directory_path() / ("marathon-bench-loop-" + std::to_string(rd()));
  NewRunOptions o;
  o.run_dir = dir / "run";
  o.policy = "llm";
  o.model = "bench:instant";
  o.max_tool_calls = steps;
  o.context_window = 128000;
  std::printf("load average at start: %s\n", load_average().c_str());
  fs::create_directories(dir);
  const double baseline_before = durable_append_s(dir, 50);
  auto store =
      create_run(load_task(fs::path(MARATHON_SOURCE_DIR) / "tests/loop/fixtures/tiny-task"), o);
  ToolRegistry tools = make_run_tools();
  InstantPolicy policy;
  StepClock clock;
  RunnerHooks hooks;
  hooks.progress = &clock;
  Runner runner(*store, policy, tools, o.run_dir, hooks);
  auto t0 = Clock::now();
  clock.last = t0;
  RunReport report = runner.run();
  double total = seconds_since(t0);
  const State& s = runner.state();

  const RunnerStats& st = runner.stats();
  double steps_done = double(s.used.tool_calls);
  double per_step_ms = 1e3 * (total - st.policy_s - st.tools_s) / steps_done;
  fs::remove(dir / "baseline.db");
  const double baseline_after = durable_append_s(dir, 50);
  const double baseline_ms = 1e3 * (baseline_before + baseline_after) / 2;
  std::printf("steps %lld (%s), events %lld, prompt messages at the end %zu\n",
              static_cast<long long>(s.used.tool_calls), report.reason.c_str(),
              static_cast<long long>(s.last_seq), policy.prompt_messages);
  std::printf("total %.3f s, in policy %.4f s\n", total, policy.policy_s);
  std::printf("overhead per step (excluding policy and tool time): mean %.3f ms\n", per_step_ms);
  std::printf(
      "  of which per step: compaction planning %.3f ms, prompt assembly (with its sha256) %.3f "
      "ms, durable appends %.3f ms in %.2f transactions, the rest %.3f ms\n",
      1e3 * st.compaction_s / steps_done, 1e3 * st.prompt_s / steps_done,
      1e3 * st.append_s / steps_done, double(st.transactions) / steps_done,
      per_step_ms - 1e3 * (st.compaction_s + st.prompt_s + st.append_s) / steps_done);
  std::printf(
      "baseline: one durable single-event append %.3f ms (before the run %.3f, after %.3f); the "
      "overhead per step is %.2f of them, the overhead without durable appends %.2f\n",
      baseline_ms, 1e3 * baseline_before, 1e3 * baseline_after, per_step_ms / baseline_ms,
      (per_step_ms - 1e3 * st.append_s / steps_done) / baseline_ms);
  size_t n = clock.steps.size();
  for (auto [from, to] :
       {std::pair<size_t, size_t>{0, n / 10}, {n / 2 - n / 20, n / 2 + n / 20}, {n - n / 10, n}}) {
    std::vector<double> part(clock.steps.begin() + long(from), clock.steps.begin() + long(to));
    if (part.empty()) continue;
    double mean = 0;
    for (double d : part) mean += d;
    mean /= double(part.size());
    std::printf("  steps %4zu-%4zu: mean %.3f ms, p50 %.3f ms, p99 %.3f ms (incl. policy)\n", from,
                to, 1e3 * mean, 1e3 * pct(part, 0.5), 1e3 * pct(part, 0.99));
  }
  std::printf("load average at the end: %s\n", load_average().c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
