// The confirmed best end to end, on the noisy task (fixtures/noisy-task: a candidate's first draw
// is +0.5, the three re-measurements after it -0.3, +0.1 and -0.1): the run announces the median
// of the re-measurements, not the lucky first draw; each re-measurement is an eval.remeasured the
// runner appends; a replay serves them from the log without running the evaluator; a kill -9 in
// the middle of a confirmation is resumed without paying for a finished re-measurement again; and
// status --json and the run summary carry the confirmed figure with its spread.
#include <gtest/gtest.h>

#include <functional>

#include "core/workspace_snapshot.h"
#include "goal/task_spec.h"
#include "loop/progress.h"
#include "loop/replay.h"
#include "loop/run_setup.h"
#include "loop/run_tools.h"
#include "loop/runner.h"
#include "loop_test_support.h"
#include "policy/replay_policy.h"
#include "scripted_llm_server.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::events_of_type;
using testing::load_events;
using testing::load_state;
using testing::read_lines;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::TempDir;

fs::path noisy_task() { return testing::source_dir() / "tests/loop/fixtures/noisy-task"; }

std::string candidate_of(const std::string& text) {
  return candidate_hash(WorkspaceFiles{{"solution.txt", sha256_hex(text)}});
}

json call(const std::string& id, const std::string& name, json args) {
  return {
      {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args.dump()}}}};
}

PolicyReply reply_with(json calls) {
  PolicyReply r;
  r.message = {{"role", "assistant"}, {"content", ""}};
  if (!calls.empty()) r.message["tool_calls"] = std::move(calls);
  r.prompt_tokens = 100;
  r.completion_tokens = 10;
  r.provider = "test";
  r.model = "scripted";
  return r;
}

// value = 2: first draw 2.5, re-measured 1.7, 2.1, 1.9 (the best: 1.9). value = 1.4: first draw
// 1.9, not above the best, so only the final confirmation re-measures it (1.1, 1.5, 1.3).
const std::string kTwo = "value = 2\n";
const std::string kOneFour = "value = 1.4\n";

class ScriptedPolicy : public Policy {
 public:
  std::string name() const override { return "scripted"; }
  PolicyReply next(const PolicyRequest& req) override {
    goal_blocks.push_back(req.messages.dump(-1, ' ', false, json::error_handler_t::replace));
    const int n = calls++;
    auto write = [&](const std::string& text) {
      return call("w" + std::to_string(n), "write_file",
                  {{"path", "solution.txt"}, {"content", text}});
    };
    auto evaluate = [&](const std::string& why) {
      return call("e" + std::to_string(n), "evaluate", {{"strategy", why}});
    };
    switch (n) {
      case 0:
        return reply_with({write(kTwo), evaluate("value 2")});
      case 1:
        return reply_with({write(kOneFour), evaluate("value 1.4")});
      default:
        return reply_with({call("f", "finish", {{"summary", "value 2 is the best"}})});
    }
  }
  int calls = 0;
  std::vector<std::string> goal_blocks;  // each request's messages, as text
};

// The evaluator's executions: one line per completed execution, the content's sha256.
class Marker {
 public:
  explicit Marker(const fs::path& file) : file_(file) {
    for (const auto& [k, v] : testing::eval_marker_env(file)) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~Marker() {
    ::unsetenv("MARATHON_EVAL_MARKER");
    ::unsetenv("MARATHON_SANDBOX_RW");
  }
  int count(const std::string& text) const {
    int n = 0;
    for (const std::string& l : read_lines(file_)) n += l == sha256_hex(text);
    return n;
  }
  size_t total() const { return read_lines(file_).size(); }

 private:
  fs::path file_;
};

struct NoisyRun {
  TempDir dir{"confirm"};
  fs::path run_dir = dir / "run";
  std::unique_ptr<EventStore> store;
  ToolRegistry tools = make_run_tools();

  explicit NoisyRun(std::function<void(TaskSpec&)> adjust = {},
                    std::optional<int64_t> max_tool_calls = std::nullopt) {
    TaskSpec task = load_task(noisy_task());
    if (adjust) adjust(task);
    NewRunOptions o;
    o.run_dir = run_dir;
    o.policy = "llm";
    o.model = "test:scripted";
    o.max_tool_calls = max_tool_calls;
    store = create_run(task, o);
  }
};

std::vector<events::EvalRemeasured> remeasured_of(const std::vector<Event>& events) {
  std::vector<events::EvalRemeasured> out;
  for (const Event& e : events_of_type(events, events::EvalRemeasured::kType)) {
    out.push_back(e.payload.get<events::EvalRemeasured>());
  }
  return out;
}

TEST(ConfirmedBest, TheAnnouncedBestIsTheMedianOfReMeasurementsNotTheLuckyFirstDraw) {
  NoisyRun r;
  Marker marker(r.dir / "marks" / "marker");
  ScriptedPolicy policy;
  RunReport report = Runner(*r.store, policy, r.tools, r.run_dir).run();
  ASSERT_EQ(report.reason, "finish");
  std::vector<Event> events = r.store->read();
  State s = fold(events);

  const std::string a = candidate_of(kTwo), b = candidate_of(kOneFour);
  ASSERT_TRUE(s.best_score);
  EXPECT_DOUBLE_EQ(*s.best_score, 1.9) << "not the first draw, 2.5";
  EXPECT_EQ(s.best_candidate, a);
  std::optional<Figure> f = best_figure(s);
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->first, 2.5);
  EXPECT_DOUBLE_EQ(f->lo, 1.7);
  EXPECT_DOUBLE_EQ(f->hi, 2.1);
  EXPECT_EQ(f->samples, 3);

  // Three re-measurements of a, before the model was asked again; three of b at the end.
  std::vector<events::EvalRemeasured> rm = remeasured_of(events);
  ASSERT_EQ(rm.size(), 6u);
  std::set<int64_t> seeds;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rm[i].candidate, a);
    EXPECT_EQ(rm[i].index, i);
    EXPECT_EQ(rm[i].phase, events::EvalRemeasured::kBest);
    EXPECT_EQ(rm[i + 3].candidate, b);
    EXPECT_EQ(rm[i + 3].index, i);
    EXPECT_EQ(rm[i + 3].phase, events::EvalRemeasured::kFinal);
    EXPECT_EQ(rm[i].result["seed"], rm[i].seed) << "the evaluator got the re-measurement's seed";
    seeds.insert(rm[i].seed);
  }
  EXPECT_EQ(seeds.size(), 3u) << "fresh inputs: each re-measurement has a seed of its own";
  int64_t last_remeasure_of_a = 0, second_request = 0, requests = 0;
  for (const Event& e : events) {
    if (e.type == events::EvalRemeasured::kType && e.payload["candidate"] == a) {
      last_remeasure_of_a = e.seq;
    }
    if (e.type == events::ModelRequest::kType && ++requests == 2) second_request = e.seq;
  }
  EXPECT_LT(last_remeasure_of_a, second_request);
  EXPECT_EQ(marker.count(kTwo), 4);
  EXPECT_EQ(marker.count(kOneFour), 4);

  // The model saw the re-measurements in its goal block before its second turn.
  ASSERT_GE(policy.goal_blocks.size(), 2u);
  EXPECT_NE(policy.goal_blocks[1].find("median of 3 re-measurements, 1.7 to 2.1; first draw 2.5"),
            std::string::npos);

  // The run summary carries the figure with its spread.
  std::string summary = run_summary(s, report, r.run_dir.string());
  EXPECT_NE(
      summary.find("best value 1.9 (median of 3 re-measurements, 1.7 to 2.1; first draw 2.5)"),
      std::string::npos)
      << summary;
  EXPECT_NE(summary.find("better than the baseline 1 beyond noise"), std::string::npos) << summary;
  EXPECT_NE(summary.find("re-measurements 6"), std::string::npos) << summary;

  // The finish tool's answer names the confirmed best.
  for (const Event& e : events_of_type(events, events::ToolFinished::kType)) {
    if (e.payload["name"] == "finish") {
      EXPECT_NE(e.payload["output"].get<std::string>().find("best score 1.9 (median of 3"),
                std::string::npos)
          << e.payload.dump();
    }
  }
}

TEST(ConfirmedBest, AReplayServesTheReMeasurementsFromTheLogAndRunsNoEvaluator) {
  NoisyRun r;
  Marker marker(r.dir / "marks" / "marker");
  ScriptedPolicy policy;
  ASSERT_EQ(Runner(*r.store, policy, r.tools, r.run_dir).run().reason, "finish");
  State original = fold(r.store->read());
  const size_t executed = marker.total();
  ASSERT_EQ(executed, 8u);

  std::vector<Event> logged;
  std::unique_ptr<EventStore> from;
  const fs::path to = r.dir / "replay";
  auto store = create_replay_run(r.run_dir, to, &logged, &from);
  ReplayPolicy replay(logged);
  State replayed;
  drive_replay(*store, to, logged, *from, replay, /*quiet=*/true, &replayed);
  EXPECT_EQ(comparable_state(replayed), comparable_state(original));
  EXPECT_EQ(marker.total(), executed) << "the replay ran the evaluator";
  EXPECT_EQ(remeasured_of(store->read()).size(), 6u);
  ASSERT_TRUE(replayed.best_score);
  EXPECT_DOUBLE_EQ(*replayed.best_score, 1.9);
}

TEST(ConfirmedBest, ATaskWithConfirmZeroAnnouncesTheFirstDrawAsBefore) {
  NoisyRun r([](TaskSpec& t) { t.goal.confirm = 0; });
  Marker marker(r.dir / "marks" / "marker");
  ScriptedPolicy policy;
  ASSERT_EQ(Runner(*r.store, policy, r.tools, r.run_dir).run().reason, "finish");
  State s = fold(r.store->read());
  ASSERT_TRUE(s.best_score);
  EXPECT_DOUBLE_EQ(*s.best_score, 2.5);
  EXPECT_TRUE(remeasured_of(r.store->read()).empty());
  EXPECT_EQ(marker.total(), 2u);
}

TEST(ConfirmedBest, TheConfirmationBudgetCapsTheReMeasurements) {
  // 4 tool calls, share 0.5: two re-measurements in all; a is announced cut short.
  NoisyRun r({}, 4);
  Marker marker(r.dir / "marks" / "marker");
  ScriptedPolicy policy;
  Runner(*r.store, policy, r.tools, r.run_dir).run();
  State s = fold(r.store->read());
  EXPECT_EQ(remeasured_of(r.store->read()).size(), 2u);
  for (const std::string& m : policy.goal_blocks) {
    EXPECT_EQ(m.find("\xef\xbf\xbd"), std::string::npos) << "a message that is not UTF-8: " << m;
  }
  ASSERT_TRUE(s.best_score);
  EXPECT_DOUBLE_EQ(*s.best_score, 1.9) << "the median of 1.7 and 2.1";
  EXPECT_TRUE(best_figure(s)->cut_short);
}

// The noisy task's script for the real binary, through the scripted OpenAI-compatible server.
ScriptedLlmServer noisy_server(const std::string& solution) {
  return ScriptedLlmServer([solution](size_t, const json& request) {
    using testing::openai_text;
    using testing::openai_tool_calls;
    const size_t turn = ScriptedLlmServer::assistant_turns(request);
    json calls = json::array();
    if (turn == 0) {
      calls.push_back({{"name", "write_file"},
                       {"arguments", {{"path", "solution.txt"}, {"content", solution}}}});
      calls.push_back({{"name", "evaluate"}, {"arguments", {{"strategy", "value 2"}}}});
    } else if (turn == 1) {
      calls.push_back({{"name", "finish"}, {"arguments", {{"summary", "value 2"}}}});
    } else {
      return openai_text("the script has ended");
    }
    return openai_tool_calls(calls, "");
  });
}

std::vector<std::string> noisy_args(const fs::path& run, const std::string& base_url) {
  return {"run",     noisy_task().string(), "--run-dir",  run.string(), "--policy", "llm",
          "--model", "vllm:scripted",       "--base-url", base_url};
}

size_t remeasured_in(const fs::path& run) {
  try {
    return remeasured_of(load_events(run)).size();
  } catch (const std::exception&) {
    return 0;
  }
}

TEST(ConfirmedBest, AKillDuringAConfirmationIsResumedWithoutPayingForAReMeasurementTwice) {
  TempDir dir("confirm-kill");
  // Each execution sleeps before it counts, so a kill lands inside one and it never completes.
  const std::string solution = "value = 2\nsleep = 0.6\n";
  ScriptedLlmServer server = noisy_server(solution);
  const fs::path run = dir / "run", marker = dir / "marks" / "marker", log = dir / "run.log";
  std::map<std::string, std::string> env = testing::eval_marker_env(marker);

  std::vector<std::string> argv{MARATHON_BINARY};
  for (const std::string& a : noisy_args(run, server.base_url())) argv.push_back(a);
  int kills = 0;
  for (size_t kill_after : {1u, 2u}) {  // killed inside the 2nd, then inside the 3rd
    Child child(argv, env, log);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (remeasured_in(run) < kill_after && std::chrono::steady_clock::now() < deadline) {
      ASSERT_FALSE(child.wait_for(0.02)) << "ended before the kill:\n" << read_text(log);
    }
    ASSERT_EQ(remeasured_in(run), kill_after) << read_text(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // into the next one
    child.kill_group();
    ++kills;
    EXPECT_EQ(remeasured_in(run), kill_after) << "the kill landed after the next one ended";
    argv = {MARATHON_BINARY, "resume", run.string()};
  }
  ASSERT_EQ(run_binary({"resume", run.string()}, env, log), 0) << read_text(log);
  State s = load_state(run);
  ASSERT_TRUE(s.done) << read_text(log);
  std::vector<events::EvalRemeasured> rm = remeasured_of(load_events(run));
  ASSERT_EQ(rm.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rm[i].index, i);
  // Completed executions: the first draw and three re-measurements, none twice (the two killed
  // ones never completed: they sleep before they count).
  std::map<std::string, int> executed;
  for (const std::string& l : read_lines(marker)) ++executed[l];
  EXPECT_EQ(executed[sha256_hex(solution)], 4);
  ASSERT_TRUE(s.best_score);
  EXPECT_DOUBLE_EQ(*s.best_score, 1.9);
  EXPECT_EQ(kills, 2);

  // The summary printed at the end and `status --json` carry the confirmed figure and its spread.
  EXPECT_NE(read_text(log).find("(median of 3 re-measurements, 1.7 to 2.1; first draw 2.5)"),
            std::string::npos)
      << read_text(log);
  const fs::path out = dir / "status.json";
  ASSERT_EQ(run_binary({"status", run.string(), "--json"}, {}, out), 0) << read_text(out);
  json st = json::parse(read_text(out));
  const json& best = st.at("confirmation").at("best");
  EXPECT_DOUBLE_EQ(best.at("value").get<double>(), 1.9);
  EXPECT_DOUBLE_EQ(best.at("min").get<double>(), 1.7);
  EXPECT_DOUBLE_EQ(best.at("max").get<double>(), 2.1);
  EXPECT_DOUBLE_EQ(best.at("first_draw").get<double>(), 2.5);
  EXPECT_EQ(best.at("samples"), 3);
  EXPECT_EQ(best.at("confirmed"), true);
  EXPECT_EQ(st.at("confirmation").at("baseline").at("verdict"), "beats");
  EXPECT_DOUBLE_EQ(st.at("best_score").get<double>(), 1.9);

  // And the human status.
  const fs::path human = dir / "status.txt";
  ASSERT_EQ(run_binary({"status", run.string()}, {}, human), 0) << read_text(human);
  EXPECT_NE(read_text(human).find("confirmed  1.9 (median of 3 re-measurements, 1.7 to 2.1"),
            std::string::npos)
      << read_text(human);
}

// An original killed inside a re-measurement, then inside its evaluation (a machine taken away):
// its replay serves what the log holds and ends where the log does, running no evaluator, with the
// original's state.
TEST(ConfirmedBest, AReplayOfAKilledRunEndsWhereItsLogEndsAndPaysForNothing) {
  TempDir dir("confirm-replay-killed");
  const std::string solution = "value = 2\nsleep = 0.6\n";
  ScriptedLlmServer server = noisy_server(solution);
  const fs::path marker = dir / "marks" / "marker";
  std::map<std::string, std::string> env = testing::eval_marker_env(marker);
  auto evaluating = [](const fs::path& run) {
    try {
      return !events_of_type(load_events(run), events::ToolStarted::kType).empty() &&
             events_of_type(load_events(run), events::EvalFinished::kType).empty() &&
             events_of_type(load_events(run), events::ToolStarted::kType).size() >= 2;
    } catch (const std::exception&) {
      return false;
    }
  };
  struct Case {
    std::string name;
    std::function<bool(const fs::path&)> ready;
  };
  const std::vector<Case> cases = {
      {"re-measurement", [](const fs::path& run) { return remeasured_in(run) >= 1; }},
      {"evaluation", evaluating}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path run = dir / (c.name + "-run"), log = dir / (c.name + ".log");
    std::vector<std::string> argv{MARATHON_BINARY};
    for (const std::string& a : noisy_args(run, server.base_url())) argv.push_back(a);
    Child child(argv, env, log);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!c.ready(run) && std::chrono::steady_clock::now() < deadline) {
      ASSERT_FALSE(child.wait_for(0.02)) << "ended before the kill:\n" << read_text(log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // inside the next execution
    child.kill_group();
    const size_t executed = read_lines(marker).size();
    const State original = load_state(run);
    ASSERT_FALSE(original.done);

    const fs::path out = dir / (c.name + "-replay.log");
    EXPECT_EQ(
        run_binary({"replay", run.string(), "--run-dir", (dir / (c.name + "-replay")).string()},
                   env, out),
        1)  // stopped where the original did, as a replay whose responses ran out
        << read_text(out);
    EXPECT_NE(read_text(out).find("final state matches the original"), std::string::npos)
        << read_text(out);
    EXPECT_NE(read_text(out).find("replay_exhausted"), std::string::npos) << read_text(out);
    EXPECT_EQ(read_lines(marker).size(), executed) << "the replay ran the evaluator";
    const State replayed = load_state(dir / (c.name + "-replay"));
    EXPECT_EQ(comparable_state(replayed), comparable_state(original));
    EXPECT_EQ(replayed.used.model_calls, original.used.model_calls);
  }
}

}  // namespace
}  // namespace marathon
