// bench_context: prompt assembly time at 1,000 steps, and the prompt size over a long scripted run.
//   bench_context                      all: the size table, the per-step table, Google Benchmark
//   bench_context --table-only STEPS   only the size table
//   bench_context --steps-only         only the per-step table
// The loop keeps one PromptCache per run (only the new events are read each step); the from-scratch
// path (a fresh cache, what a resumed process does once) is the baseline, measured in the same run.
#include <benchmark/benchmark.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "context/compaction.h"
#include "context/prompt_builder.h"
#include "context/token_estimate.h"
#include "core/event_store.h"
#include "core/fold.h"
#include "policy/policy.h"

using namespace marathon;
using namespace marathon::context;

namespace {

std::string filler(size_t bytes, int seed) {
  std::string s;
  for (size_t i = 0; s.size() < bytes; ++i) {
    s += static_cast<char>('a' + (i * 7 + seed) % 26);
    s += static_cast<char>('a' + (i * 3) % 26);
    s += (i % 9 == 8) ? '\n' : ' ';
  }
  s.resize(bytes);
  return s;
}

class Summariser : public Policy {
 public:
  std::string name() const override { return "bench"; }
  PolicyReply next(const PolicyRequest&) override {
    PolicyReply r;
    r.message = {{"role", "assistant"},
                 {"content", "Summary of the earlier turns. " + filler(1500, 3)}};
    return r;
  }
};

double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Time spent in compaction (plan + run) and prompt assembly, per step.
struct StepTime {
  double plan_cpu = 0, build_cpu = 0, plan_wall = 0, build_wall = 0;
  size_t events = 0;  // in the log when the step began
};

// A scripted run: read_file / write_file / run / evaluate / note, with compaction as the loop does
// it: with one PromptCache for the run (cached) or from scratch every step.
struct Run {
  std::vector<Event> events;
  State state;
  ContextConfig cfg;
  json tools = json::array();
  std::map<std::string, std::string> blobs;
  Summariser summariser;
  bool cached = true;
  std::optional<PromptCache> cache;
  std::vector<StepTime> times;

  explicit Run(int64_t window, bool use_cache = true) : cached(use_cache) {
    add(events::RunCreated::kType,
        {{"run_id", "bench"},
         {"task", {{"name", "cpu-matmul"}, {"description", "Make matmul fast."}}},
         {"goal", {{"objective", "4x"}, {"metric", "speedup"}, {"target", 4.0}}},
         {"budget", {{"max_tool_calls", 100000}}},
         {"config", {{"context_window", window}}}});
    cfg = ContextConfig::from_run_config(state.config);
    for (const char* n : {"read_file", "write_file", "edit_file", "list_files", "grep", "run",
                          "evaluate", "note", "revert", "finish", "recall"}) {
      tools.push_back(
          {{"type", "function"},
           {"function",
            {{"name", n}, {"description", filler(200, 1)}, {"parameters", {{"type", "object"}}}}}});
    }
    cache.emplace(cfg, tools);
  }
  const Event& add(const std::string& type, json payload) {
    Event e;
    e.seq = static_cast<int64_t>(events.size()) + 1;
    e.id = "e" + std::to_string(e.seq);
    e.recorded_at_us = e.seq * 1000;
    e.type = type;
    e.payload = std::move(payload);
    apply(state, e);
    events.push_back(std::move(e));
    return events.back();
  }
  ContextIO io() {
    return {[this](const NewEvent& n) { return add(n.type, n.payload); },
            [this](const std::string& b) {
              std::string sha = "b" + std::to_string(blobs.size());
              blobs[sha] = b;
              return sha;
            },
            [this](const std::string& s) -> std::optional<std::string> { return blobs.at(s); }};
  }
  // One step: compaction (if planned), prompt, request, response, tool call. Returns the prompt.
  Prompt step(int i, bool compact) {
    StepTime t;
    t.events = events.size();
    double c0 = cpu_now(), w0 = wall_now();
    if (compact) {
      if (cached) {
        CompactionPlan p = plan_compaction(*cache, state, events);
        if (p.needed())
          run_compaction(*cache, p, state, events, summariser_of(summariser, nullptr), io());
      } else {
        CompactionPlan p = plan_compaction(state, events, cfg, tools);
        if (p.needed())
          run_compaction(p, state, events, cfg, summariser_of(summariser, nullptr), io(), tools);
      }
    }
    double c1 = cpu_now(), w1 = wall_now();
    Prompt prompt =
        cached ? build_prompt(*cache, state, events) : build_prompt(state, events, cfg, tools);
    t.plan_cpu = c1 - c0;
    t.plan_wall = w1 - w0;
    t.build_cpu = cpu_now() - c1;
    t.build_wall = wall_now() - w1;
    times.push_back(t);
    add(events::ModelRequest::kType, {{"turn", 1}, {"tokens_estimate", prompt.tokens_raw}});
    std::string id = "c" + std::to_string(i);
    const char* name = i % 10 == 9  ? "evaluate"
                       : i % 3 == 0 ? "write_file"
                       : i % 3 == 1 ? "read_file"
                                    : "run";
    json args = std::string(name) == "write_file"
                    ? json{{"path", "kernel.cc"}, {"content", filler(1500, i)}}
                    : json{{"path", "kernel.cc"}};
    add(events::ModelResponse::kType,
        {{"message",
          {{"content", "Step " + std::to_string(i) + ": trying the next variant"},
           {"tool_calls",
            json::array({{{"id", id}, {"name", name}, {"arguments", args.dump()}}})}}},
         {"usage", {{"prompt_tokens", prompt.tokens_raw * 11 / 10}, {"completion_tokens", 60}}}});
    add(events::ToolStarted::kType, {{"call_id", id}, {"name", name}, {"arguments", args}});
    std::string out = std::string(name) == "read_file" ? filler(2500 + i * 37 % 2000, i)
                      : std::string(name) == "run"     ? filler(900 + i * 13 % 800, i)
                                                       : "ok";
    add(events::ToolFinished::kType,
        {{"call_id", id}, {"name", name}, {"ok", true}, {"output", out}});
    if (i % 10 == 9) {
      add(events::EvalFinished::kType,
          {{"candidate", "cand" + std::to_string(i)},
           {"status", "ok"},
           {"result", {{"correct", i % 20 != 19}, {"score", 1.0 + (i % 97) / 50.0}}},
           {"strategy", "variant " + std::to_string(i % 13)}});
    }
    if (i % 50 == 0)
      add(events::LedgerNoted::kType,
          {{"kind", "dead_end"}, {"text", "dead end " + std::to_string(i)}});
    return prompt;
  }
};

Run& run_at_1000() {
  static Run* r = [] {
    auto* run = new Run(128000);
    for (int i = 0; i < 1000; ++i) run->step(i, true);
    return run;
  }();
  return *r;
}

Run& run_at_1000_uncompacted() {
  static Run* r = [] {
    auto* run = new Run(128000);
    for (int i = 0; i < 1000; ++i) run->step(i, false);
    return run;
  }();
  return *r;
}

// From scratch: a fresh cache built from the whole log (the baseline).
void BM_BuildPromptAt1000Steps(benchmark::State& st) {
  Run& r = run_at_1000();
  for (auto _ : st) benchmark::DoNotOptimize(build_prompt(r.state, r.events, r.cfg, r.tools));
  st.counters["events"] = static_cast<double>(r.events.size());
  st.counters["prompt_tokens"] =
      static_cast<double>(build_prompt(r.state, r.events, r.cfg, r.tools).tokens_estimate);
}
BENCHMARK(BM_BuildPromptAt1000Steps)->Unit(benchmark::kMillisecond);

// With the run's cache up to date: what assembly costs when no event is new (the per-step cost
// adds the new events' preparation: see the per-step table).
void BM_BuildPromptCachedAt1000Steps(benchmark::State& st) {
  Run& r = run_at_1000();
  for (auto _ : st) benchmark::DoNotOptimize(build_prompt(*r.cache, r.state, r.events));
}
BENCHMARK(BM_BuildPromptCachedAt1000Steps)->Unit(benchmark::kMillisecond);

void BM_PlanCompactionAt1000Steps(benchmark::State& st) {
  Run& r = run_at_1000();
  for (auto _ : st) benchmark::DoNotOptimize(plan_compaction(r.state, r.events, r.cfg, r.tools));
}
BENCHMARK(BM_PlanCompactionAt1000Steps)->Unit(benchmark::kMillisecond);

void BM_PlanCompactionCachedAt1000Steps(benchmark::State& st) {
  Run& r = run_at_1000();
  for (auto _ : st) benchmark::DoNotOptimize(plan_compaction(*r.cache, r.state, r.events));
}
BENCHMARK(BM_PlanCompactionCachedAt1000Steps)->Unit(benchmark::kMillisecond);

void BM_BuildPromptAt1000StepsNoCompaction(benchmark::State& st) {
  Run& r = run_at_1000_uncompacted();
  for (auto _ : st) benchmark::DoNotOptimize(build_prompt(r.state, r.events, r.cfg, r.tools));
}
BENCHMARK(BM_BuildPromptAt1000StepsNoCompaction)->Unit(benchmark::kMillisecond);

void BM_BuildPromptCachedAt1000StepsNoCompaction(benchmark::State& st) {
  Run& r = run_at_1000_uncompacted();
  for (auto _ : st) benchmark::DoNotOptimize(build_prompt(*r.cache, r.state, r.events));
}
BENCHMARK(BM_BuildPromptCachedAt1000StepsNoCompaction)->Unit(benchmark::kMillisecond);

// Mean per-step time of steps [from, to) in ms: {plan cpu, build cpu, plan wall, build wall}.
StepTime mean_ms(const Run& r, size_t from, size_t to) {
  StepTime m;
  for (size_t i = from; i < to; ++i) {
    m.plan_cpu += r.times[i].plan_cpu;
    m.build_cpu += r.times[i].build_cpu;
    m.plan_wall += r.times[i].plan_wall;
    m.build_wall += r.times[i].build_wall;
  }
  const double k = 1e3 / static_cast<double>(to - from);
  return {m.plan_cpu * k, m.build_cpu * k, m.plan_wall * k, m.build_wall * k,
          r.times[to - 1].events};
}

// The cost of a step (compaction planning + prompt assembly) as the run grows, with the run's cache
// and from scratch (the baseline), over the same scripted run (128k window, compaction on).
void step_table(int steps) {
  Run cached(128000, true), scratch(128000, false);
  for (int i = 0; i < steps; ++i) {
    Prompt a = cached.step(i, true);
    Prompt b = scratch.step(i, true);
    if (a.sha256 != b.sha256) {
      std::printf("step %d: the cached prompt differs from the one built from scratch\n", i);
      return;
    }
  }
  std::printf(
      "| steps | events | cached: planning | cached: assembly | from scratch: planning | from "
      "scratch: assembly | ratio (scratch / cached, plan+assembly) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  const size_t n = static_cast<size_t>(steps);
  for (auto [from, to] :
       {std::pair<size_t, size_t>{0, n / 10}, {n / 2 - n / 20, n / 2 + n / 20}, {n - n / 10, n}}) {
    StepTime c = mean_ms(cached, from, to), s = mean_ms(scratch, from, to);
    std::printf(
        "| %zu-%zu | %zu | %.3f ms (wall %.3f) | %.3f ms (wall %.3f) | %.3f ms | %.3f ms | %.1fx "
        "|\n",
        from, to - 1, c.events, c.plan_cpu, c.plan_wall, c.build_cpu, c.build_wall, s.plan_cpu,
        s.build_cpu, (s.plan_cpu + s.build_cpu) / (c.plan_cpu + c.build_cpu));
  }
  std::printf(
      "(CPU time per step, means over the steps; the prompts of both paths are identical)\n");
}

void size_table(int steps) {
  Run r(32000);
  std::printf(
      "| step | events | prompt tokens (est.) | prompt bytes | messages | elisions | summaries "
      "|\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int i = 0; i < steps; ++i) {
    Prompt p = r.step(i, true);
    if (i % 100 == 0 || i == steps - 1) {
      int elisions = 0;
      for (const Event& e : r.events) elisions += e.type == events::CompactionElided::kType;
      std::printf("| %d | %zu | %lld | %zu | %zu | %d | %lld |\n", i, r.events.size(),
                  static_cast<long long>(p.tokens_estimate), p.messages.dump().size(),
                  p.messages.size(), elisions,
                  static_cast<long long>(r.state.compaction.compactions));
    }
  }
}

}  // namespace

// The same scripted run (32k window, compaction on) as a digest of every prompt it sends: two
// builds of the context module send byte-identical prompts when their digests agree.
void prompt_digest(int steps) {
  Run r(32000, true);
  std::string shas;
  for (int i = 0; i < steps; ++i) shas += r.step(i, true).sha256;
  std::printf("%d prompts, %zu events, %lld compactions: sha256 of the prompts' sha256s %s\n",
              steps, r.events.size(), static_cast<long long>(r.state.compaction.compactions),
              sha256_hex(shas).c_str());
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--prompt-digest") == 0) {
    prompt_digest(std::atoi(argv[2]));
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--table-only") == 0) {
    size_table(std::atoi(argv[2]));
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--steps-only") == 0) {
    step_table(1000);
    return 0;
  }
  std::printf("Prompt size over a scripted run (32k window):\n\n");
  size_table(1200);
  std::printf("\nPer-step cost over a scripted run (128k window, compaction on):\n\n");
  step_table(1000);
  std::printf("\n");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
