// End to end through the real binary and real HTTP: the scripted OpenAI-compatible server
// (tests/fixtures) on loopback plays the model; `marathon run`, `resume` and `replay` run as child
// processes. The script is indexed by the number of assistant messages in a request, so a request
// repeated after a kill gets the same answer, as a deterministic model would give.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>

#include "core/event_store.h"
#include "core/fold.h"
#include "core/run_lock.h"
#include "core/workspace_snapshot.h"
#include "loop/replay.h"
#include "loop_test_support.h"
#include "scripted_llm_server.h"
#include "tiny_script.h"

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
using testing::ScriptedResponse;
using testing::TempDir;

TEST(EndToEnd, ScriptedModelOverHttpDrivesATinyRunToItsBestCandidate) {
  TempDir dir("e2e-tiny");
  ScriptedLlmServer server = tiny_server();
  fs::path run = dir / "run";
  std::map<std::string, std::string> env = testing::eval_marker_env(dir / "marks" / "marker");
  int rc = run_binary(tiny_run_args(run, server.base_url()), env, dir / "log");
  ASSERT_EQ(rc, 0) << read_text(dir / "log");

  State s = load_state(run);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.finish_reason, "finish");
  ASSERT_TRUE(s.best_score.has_value());
  EXPECT_EQ(*s.best_score, 5);
  EXPECT_EQ(s.best_candidate, tiny_candidate("value = 5\n"));
  EXPECT_EQ(s.evaluations, 4);
  EXPECT_EQ(s.evaluations_executed, 3) << "the re-evaluation after revert is a cache hit";
  EXPECT_EQ(read_lines(dir / "marks" / "marker").size(), 3u);
  EXPECT_EQ(server.request_count(), kTinyTurns + 0);
  EXPECT_EQ(s.used.model_calls, int64_t(kTinyTurns));
  EXPECT_EQ(read_text(run / "workspace/solution.txt"), "value = 5\n");
  int dead_ends = 0;
  for (const LedgerEntry& l : s.ledger) dead_ends += l.kind == LedgerKind::kDeadEnd;
  EXPECT_EQ(dead_ends, 1);
  // The stop without `finish` started a goal turn.
  int goal_turns = 0;
  for (const Event& e : events_of_type(load_events(run), "user.message")) {
    goal_turns += e.payload["reason"] == "goal_turn";
  }
  EXPECT_EQ(goal_turns, 1);
  // No API key or other secret in the log: the config records names only.
  EXPECT_FALSE(s.config.contains("api_key"));
  // The evaluator's baseline (top-level baseline_score) reaches the model: in the evaluate tool's
  // output and in the goal block of every prompt after the first correct evaluation.
  ASSERT_TRUE(s.baseline_score.has_value());
  EXPECT_EQ(*s.baseline_score, 1);
  std::string last = server.requests().back().body.dump();
  EXPECT_NE(last.find("Baseline: 1\\n"), std::string::npos) << last.substr(0, 3000);
  EXPECT_NE(last.find("(baseline 1)"), std::string::npos) << "the evaluate tool hid the baseline";
}

TEST(EndToEnd, ReplayReproducesTheFinalStateWithZeroModelCallsAndNoEvaluations) {
  TempDir dir("e2e-replay");
  ScriptedLlmServer server = tiny_server();
  fs::path run = dir / "run", replay = dir / "replay";
  std::map<std::string, std::string> env = testing::eval_marker_env(dir / "marks" / "marker");
  ASSERT_EQ(run_binary(tiny_run_args(run, server.base_url()), env, dir / "log"), 0)
      << read_text(dir / "log");
  size_t requests = server.request_count();
  size_t executions = read_lines(dir / "marks" / "marker").size();

  int rc = run_binary({"replay", run.string(), "--run-dir", replay.string(), "--quiet"}, env,
                      dir / "replay.log");
  ASSERT_EQ(rc, 0) << read_text(dir / "replay.log");
  EXPECT_NE(read_text(dir / "replay.log").find("matches the original"), std::string::npos);
  EXPECT_EQ(server.request_count(), requests) << "replay made a model call";
  EXPECT_EQ(read_lines(dir / "marks" / "marker").size(), executions) << "replay ran the evaluator";
  EXPECT_EQ(comparable_state(load_state(replay)), comparable_state(load_state(run)));
  EXPECT_EQ(read_text(replay / "workspace/solution.txt"), "value = 5\n");
}

// What `marathon status` (and --json) of a replay says it spent: the budget figures count the
// original's spend again (the replay stops where the original did), and say so.
TEST(EndToEnd, AReplaysStatusAndReportSayTheSpendIsTheOriginalsAndTheReplaySpentNothing) {
  TempDir dir("e2e-replay-spend");
  ScriptedLlmServer server = tiny_server();
  fs::path run = dir / "run", replay = dir / "replay";
  std::map<std::string, std::string> env = testing::eval_marker_env(dir / "marks" / "marker");
  ASSERT_EQ(run_binary(tiny_run_args(run, server.base_url()), env, dir / "log"), 0)
      << read_text(dir / "log");
  ASSERT_EQ(run_binary({"replay", run.string(), "--run-dir", replay.string(), "--quiet"}, env,
                       dir / "replay.log"),
            0)
      << read_text(dir / "replay.log");
  const State original = load_state(run);
  const std::string tokens =
      std::to_string(original.used.prompt_tokens + original.used.completion_tokens);
  const std::string spent_note = "this replay: $0, 0 tokens, 0 model calls";
  EXPECT_NE(read_text(dir / "replay.log").find(spent_note), std::string::npos)
      << read_text(dir / "replay.log");

  ASSERT_EQ(run_binary({"status", replay.string()}, {}, dir / "status.txt"), 0);
  const std::string status = read_text(dir / "status.txt");
  EXPECT_NE(status.find("replayed from " + original.run_id + ": the original spent $"),
            std::string::npos)
      << status;
  EXPECT_NE(status.find(tokens + " tokens in " + std::to_string(kTinyTurns) + " model calls"),
            std::string::npos)
      << status;
  EXPECT_NE(status.find(spent_note), std::string::npos) << status;

  ASSERT_EQ(run_binary({"status", replay.string(), "--json"}, {}, dir / "status.json"), 0);
  const json j = json::parse(read_text(dir / "status.json"));
  EXPECT_EQ(j["replay_of"], original.run_id);
  EXPECT_EQ(j["budget"]["replayed"], true);
  EXPECT_EQ(j["budget"]["used"]["model_calls"], kTinyTurns) << "what the budgets count";
  EXPECT_EQ(j["budget"]["spent_by_this_run"],
            json({{"model_calls", 0}, {"tokens", 0}, {"cost_usd", 0.0}, {"gpu_s", 0.0}}));

  // The original says nothing of the kind, and spent what it counts.
  ASSERT_EQ(run_binary({"status", run.string(), "--json"}, {}, dir / "original.json"), 0);
  const json o = json::parse(read_text(dir / "original.json"));
  EXPECT_TRUE(o["replay_of"].is_null());
  EXPECT_EQ(o["budget"]["replayed"], false);
  EXPECT_EQ(o["budget"]["spent_by_this_run"]["model_calls"], kTinyTurns);
  EXPECT_EQ(o["budget"]["spent_by_this_run"]["tokens"], std::stoll(tokens));
  ASSERT_EQ(run_binary({"status", run.string()}, {}, dir / "original.txt"), 0);
  EXPECT_EQ(read_text(dir / "original.txt").find("replay"), std::string::npos);

  // The report's budget view carries the same note.
  ASSERT_EQ(run_binary({"report", replay.string(), "-o", (dir / "report.html").string()}, {},
                       dir / "report.log"),
            0)
      << read_text(dir / "report.log");
  const std::string html = read_text(dir / "report.html");
  EXPECT_NE(html.find("\"replayed\":true"), std::string::npos);
  EXPECT_NE(html.find(spent_note), std::string::npos);
}

// Anthropic's pause_turn through real HTTP: the paused reply goes back as the request's last
// message, as it is (no goal turn, no note, no user text after it), the model carries on, and the
// replay reaches the same end with no request to the server.
TEST(EndToEnd, AnAnthropicPausedTurnIsContinuedAsItIsAndReplaysWithNoRequest) {
  TempDir dir("e2e-pause-turn");
  using testing::anthropic_tool_use;
  auto write = [](const std::string& id, const std::string& text) {
    return json{{"id", id},
                {"name", "write_file"},
                {"arguments", {{"path", "solution.txt"}, {"content", text}}}};
  };
  const std::string paused_text = "The value could go higher; let me keep working on it.";
  ScriptedResponse paused = testing::anthropic_text(paused_text);
  paused.body["stop_reason"] = "pause_turn";
  ScriptedLlmServer server(std::vector<ScriptedResponse>{
      anthropic_tool_use(json::array({write("toolu_w1", "value = 4\n")}), "Start at 4."),
      paused,
      anthropic_tool_use(
          json::array({json{
              {"id", "toolu_e"}, {"name", "evaluate"}, {"arguments", {{"strategy", "value 4"}}}}}),
          " So: evaluate 4."),
      anthropic_tool_use(json::array(
          {json{{"id", "toolu_f"}, {"name", "finish"}, {"arguments", {{"summary", "value 4"}}}}})),
  });
  fs::path run = dir / "run", replay = dir / "replay";
  std::map<std::string, std::string> env = testing::eval_marker_env(dir / "marks" / "marker");
  env["ANTHROPIC_API_KEY"] = "scripted-test-key";
  int rc = run_binary(
      {"run", testing::tiny_task().string(), "--run-dir", run.string(), "--policy", "llm",
       "--model", "anthropic:claude-scripted", "--base-url", server.base_url(), "--quiet"},
      env, dir / "log");
  ASSERT_EQ(rc, 0) << read_text(dir / "log");
  State s = load_state(run);
  EXPECT_EQ(s.finish_reason, "finish");
  ASSERT_EQ(server.request_count(), 4u);
  std::vector<testing::RecordedRequest> reqs = server.requests();
  EXPECT_EQ(reqs[1].path, "/v1/messages");
  // The request after the pause ends with the paused turn, exactly as it came (a cache
  // breakpoint marks the end of the transcript, as in every request).
  const json& continued = reqs[2].body["messages"];
  json last = continued.back();
  ASSERT_EQ(last["content"].size(), 1u);
  last["content"][0].erase("cache_control");
  EXPECT_EQ(last,
            json({{"role", "assistant"},
                  {"content", json::array({json{{"type", "text"}, {"text", paused_text}}})}}));
  // Before it, the same conversation as the paused request minus its live tail: the tool result
  // alone.
  const json& before = reqs[1].body["messages"];
  ASSERT_EQ(continued.size(), before.size() + 1);
  for (size_t i = 0; i + 1 < before.size(); ++i) EXPECT_EQ(continued[i], before[i]) << i;
  EXPECT_EQ(continued[before.size() - 1]["content"].size(), 1u);
  EXPECT_EQ(continued[before.size() - 1]["content"][0]["type"], "tool_result");
  std::vector<Event> events = load_events(run);
  EXPECT_TRUE(events_of_type(events, "user.message").empty()) << "no goal turn and no note";
  auto responses = events_of_type(events, "model.response");
  ASSERT_EQ(responses.size(), 4u);
  EXPECT_EQ(responses[1].payload["finish_reason"], "pause_turn");
  EXPECT_EQ(s.evaluations, 1);

  ASSERT_EQ(run_binary({"replay", run.string(), "--run-dir", replay.string(), "--quiet"}, env,
                       dir / "replay.log"),
            0)
      << read_text(dir / "replay.log");
  EXPECT_NE(read_text(dir / "replay.log").find("matches the original"), std::string::npos);
  EXPECT_EQ(server.request_count(), 4u) << "the replay made a model call";
  EXPECT_EQ(comparable_state(load_state(replay)), comparable_state(s));
  auto sent = events_of_type(events, "model.request");
  auto replayed = events_of_type(load_events(replay), "model.request");
  ASSERT_EQ(replayed.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(replayed[i].payload["prompt_sha"], sent[i].payload["prompt_sha"]) << i;
  }
}

TEST(EndToEnd, BadToolCallsThroughTheLoopAreAnsweredAsErrorsAndNothingEscapesTheWorkspace) {
  TempDir dir("e2e-bad");
  ScriptedLlmServer server([](size_t, const json& request) {
    size_t turn = ScriptedLlmServer::assistant_turns(request);
    if (turn == 0) {
      json calls = json::array();
      calls.push_back(
          {{"id", "bad_json"}, {"name", "note"}, {"arguments", "{\"kind\": \"finding\", "}});
      calls.push_back(
          {{"id", "unknown"}, {"name", "launch_rockets"}, {"arguments", json::object()}});
      calls.push_back({{"id", "escape"},
                       {"name", "write_file"},
                       {"arguments", {{"path", "../escaped.txt"}, {"content", "x"}}}});
      calls.push_back({{"id", "absolute"},
                       {"name", "write_file"},
                       {"arguments",
                        {{"path", (fs::temp_directory_path() / "marathon-abs-escape").string()},
                         {"content", "x"}}}});
      return testing::openai_tool_calls(calls);
    }
    return testing::openai_tool_calls(json::array({tc("finish", {{"summary", "done"}})}));
  });
  fs::path run = dir / "run";
  int rc = run_binary(tiny_run_args(run, server.base_url()), {}, dir / "log");
  ASSERT_EQ(rc, 0) << read_text(dir / "log");
  State s = load_state(run);
  EXPECT_EQ(s.finish_reason, "finish");
  std::map<std::string, json> fin;
  for (const Event& e : events_of_type(load_events(run), events::ToolFinished::kType)) {
    fin[e.payload["call_id"]] = e.payload;
  }
  for (const char* id : {"bad_json", "unknown", "escape", "absolute"}) {
    ASSERT_TRUE(fin.count(id)) << id;
    EXPECT_FALSE(fin[id]["ok"].get<bool>()) << id;
  }
  EXPECT_NE(fin["bad_json"]["output"].get<std::string>().find("not valid JSON"), std::string::npos);
  EXPECT_NE(fin["unknown"]["output"].get<std::string>().find("unknown tool"), std::string::npos);
  EXPECT_FALSE(fs::exists(run / "escaped.txt"));
  EXPECT_FALSE(fs::exists(fs::temp_directory_path() / "marathon-abs-escape"));
  // The model got each error as the result of its call in the next request.
  std::vector<testing::RecordedRequest> reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  int tool_msgs = 0;
  for (const json& m : reqs[1].body["messages"]) tool_msgs += m["role"] == "tool";
  EXPECT_EQ(tool_msgs, 4);
}

// A slow "model": every reply of the tiny script waits, so a signal lands mid-run.
ScriptedLlmServer slow_tiny_server() {
  return ScriptedLlmServer([](size_t, const json& request) {
    ScriptedResponse r = tiny_script(ScriptedLlmServer::assistant_turns(request));
    r.delay_s = 0.3;
    return r;
  });
}

TEST(EndToEnd, SigintPausesTheRunCleanlyAndResumeFinishesIt) {
  TempDir dir("e2e-sigint");
  ScriptedLlmServer server = slow_tiny_server();
  fs::path run = dir / "run";
  std::vector<std::string> argv{MARATHON_BINARY};
  for (const std::string& a : tiny_run_args(run, server.base_url())) argv.push_back(a);
  Child child(argv, {}, dir / "log");
  while (server.request_count() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  child.signal(SIGINT);
  std::optional<int> rc = child.wait_for(60);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 130) << read_text(dir / "log");
  // Acknowledged at once, not only when the step in flight ends.
  EXPECT_NE(read_text(dir / "log").find("stopping after the step in flight"), std::string::npos);
  State paused = load_state(run);
  EXPECT_TRUE(paused.paused);
  EXPECT_FALSE(paused.done);
  EXPECT_TRUE(paused.in_flight.empty());
  EXPECT_EQ(events_of_type(load_events(run), events::RunPaused::kType).back().payload["reason"],
            "interrupted");

  ASSERT_EQ(run_binary({"resume", run.string(), "--quiet"}, {}, dir / "log"), 0)
      << read_text(dir / "log");
  State s = load_state(run);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(*s.best_score, 5);
}

// A run folder copied to another machine, where the task's folder is elsewhere: `resume` says what
// to give and changes nothing, refuses a folder holding another task, and with the same task's
// folder (--task) carries on and finishes; later resumes keep it.
TEST(EndToEnd, ARunMovedToAnotherMachineResumesWithItsTaskThereAndOnlyThatTask) {
  TempDir dir("e2e-moved");
  ScriptedLlmServer server = slow_tiny_server();
  fs::create_directories(dir / "a");
  fs::copy(testing::tiny_task(), dir / "a" / "task", fs::copy_options::recursive);
  std::vector<std::string> argv{MARATHON_BINARY};
  for (const std::string& a : tiny_run_args(dir / "a" / "run", server.base_url())) {
    argv.push_back(a);
  }
  argv[2] = (dir / "a" / "task").string();
  Child child(argv, {}, dir / "log");
  while (server.request_count() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  child.signal(SIGINT);
  ASSERT_EQ(child.wait_for(60), std::optional<int>(130)) << read_text(dir / "log");
  // The machine is gone; its folders come back under another root.
  fs::rename(dir / "a", dir / "b");
  const fs::path run = dir / "b" / "run";
  const size_t before = load_events(run).size();

  EXPECT_EQ(run_binary({"resume", run.string(), "--quiet"}, {}, dir / "log1"), 2);
  const std::string why = read_text(dir / "log1");
  EXPECT_NE(why.find((dir / "a" / "task").string()), std::string::npos) << why;
  EXPECT_NE(why.find("--task"), std::string::npos) << why;
  EXPECT_NE(why.find("nothing was changed"), std::string::npos) << why;
  EXPECT_EQ(load_events(run).size(), before);

  // Another task (its goal's target changed) is not this run's.
  fs::copy(dir / "b" / "task", dir / "other", fs::copy_options::recursive);
  {
    std::string text = read_text(dir / "other" / "task.toml");
    const size_t at = text.find("direction");
    ASSERT_NE(at, std::string::npos) << text;
    text.insert(text.find('\n', at) + 1, "target = 123\n");
    std::ofstream(dir / "other" / "task.toml") << text;
  }
  EXPECT_EQ(run_binary({"resume", run.string(), "--task", (dir / "other").string(), "--quiet"}, {},
                       dir / "log2"),
            2);
  EXPECT_NE(read_text(dir / "log2").find("differs in: goal"), std::string::npos)
      << read_text(dir / "log2");
  EXPECT_EQ(load_events(run).size(), before);

  ASSERT_EQ(run_binary({"resume", run.string(), "--task", (dir / "b" / "task").string(), "--quiet"},
                       {}, dir / "log3"),
            0)
      << read_text(dir / "log3");
  State s = load_state(run);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(*s.best_score, 5);
  EXPECT_EQ(s.config.value("task_dir", ""), (dir / "b" / "task").string());
  std::vector<Event> resumed = events_of_type(load_events(run), events::RunResumed::kType);
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(resumed[0].payload["config"]["task_dir"], (dir / "b" / "task").string());
  EXPECT_EQ(resumed[0].payload["host"], this_host());  // where the run carried on
}

}  // namespace
}  // namespace marathon

namespace marathon {
namespace {

// The real CPU task: the scripted model evaluates the starter, breaks the kernel (the evaluator
// says so), writes a register-blocked kernel, evaluates it, notes and finishes. Scores are timings,
// so the test checks what the state records, not which kernel won.
TEST(EndToEndCpuMatmul, ScriptedModelOverHttpWritesKernelsEvaluatesNotesAndFinishes) {
  TempDir dir("e2e-matmul");
  const std::string broken = "void matmul(const float* A, const float* B, float* C, int n) {}\n";
  const std::string blocked =
      R"(// i-k-j with four rows of C per pass: each B row loaded is used four times.
#include <cstring>
void matmul(const float* A, const float* B, float* C, int n) {
  std::memset(C, 0, sizeof(float) * static_cast<size_t>(n) * n);
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    float* c0 = C + static_cast<long>(i) * n;
    float* c1 = c0 + n;
    float* c2 = c1 + n;
    float* c3 = c2 + n;
    for (int k = 0; k < n; ++k) {
      const float* b = B + static_cast<long>(k) * n;
      const float a0 = A[static_cast<long>(i) * n + k], a1 = A[static_cast<long>(i + 1) * n + k];
      const float a2 = A[static_cast<long>(i + 2) * n + k], a3 = A[static_cast<long>(i + 3) * n + k];
      for (int j = 0; j < n; ++j) {
        c0[j] += a0 * b[j];
        c1[j] += a1 * b[j];
        c2[j] += a2 * b[j];
        c3[j] += a3 * b[j];
      }
    }
  }
  for (; i < n; ++i) {
    float* c = C + static_cast<long>(i) * n;
    for (int k = 0; k < n; ++k) {
      const float a = A[static_cast<long>(i) * n + k];
      const float* b = B + static_cast<long>(k) * n;
      for (int j = 0; j < n; ++j) c[j] += a * b[j];
    }
  }
}
)";
  ScriptedLlmServer server([&](size_t, const json& request) {
    json calls = json::array();
    switch (ScriptedLlmServer::assistant_turns(request)) {
      case 0:
        calls.push_back(tc("evaluate", {{"strategy", "starter as given"}}));
        break;
      case 1:
        calls.push_back(tc("write_file", {{"path", "kernel.cc"}, {"content", broken}}));
        break;
      case 2:
        calls.push_back(tc("evaluate", {{"strategy", "empty body (should fail)"}}));
        break;
      case 3:
        calls.push_back(tc("note", {{"kind", "dead_end"}, {"text", "an empty kernel is wrong"}}));
        calls.push_back(tc("write_file", {{"path", "kernel.cc"}, {"content", blocked}}));
        break;
      case 4:
        calls.push_back(tc("evaluate", {{"strategy", "4-row register blocking"}}));
        break;
      case 5:
        calls.push_back(tc("note", {{"kind", "finding"}, {"text", "row blocking measured"}}));
        calls.push_back(tc("finish", {{"summary", "row-blocked kernel"}}));
        break;
      default:
        return testing::openai_text("the script has ended");
    }
    return testing::openai_tool_calls(calls);
  });
  fs::path run = dir / "run";
  int rc = run_binary(
      {"run", (testing::source_dir() / "tasks/cpu-matmul").string(), "--run-dir", run.string(),
       "--policy", "llm", "--model", "vllm:scripted", "--base-url", server.base_url()},
      {}, dir / "log", 600);
  ASSERT_EQ(rc, 0) << read_text(dir / "log");
  std::cout << read_text(dir / "log");
  State s = load_state(run);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.finish_reason, "finish");
  EXPECT_EQ(s.evaluations, 3);
  EXPECT_EQ(s.evaluations_executed, 3);
  std::vector<const LedgerEntry*> attempts;
  for (const LedgerEntry& l : s.ledger) {
    if (l.kind == LedgerKind::kAttempt) attempts.push_back(&l);
  }
  ASSERT_EQ(attempts.size(), 3u);
  EXPECT_TRUE(attempts[0]->correct.value_or(false)) << attempts[0]->failure;
  EXPECT_FALSE(attempts[1]->correct.value_or(true)) << "the empty kernel must fail";
  EXPECT_FALSE(attempts[1]->failure.empty());
  EXPECT_TRUE(attempts[2]->correct.value_or(false)) << attempts[2]->failure;
  // The improvement over the start: the run's best is a correct candidate, announced at the
  // median of its re-measurements (cpu-matmul keeps the default [goal] confirm = 3;
  // docs/evaluation.md, "Confirmed best"), and the baseline (the naive loop) is recorded.
  ASSERT_TRUE(s.best_score.has_value());
  std::optional<Figure> f = best_figure(s);
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(f->confirmed);
  EXPECT_EQ(f->samples, 3);
  EXPECT_EQ(*s.best_score, f->value);
  EXPECT_EQ(
      s.confirm.remeasured,
      static_cast<int64_t>(events_of_type(load_events(run), events::EvalRemeasured::kType).size()));
  EXPECT_TRUE(s.best_candidate == attempts[0]->candidate ||
              s.best_candidate == attempts[2]->candidate);
  ASSERT_TRUE(s.baseline_score.has_value());
  EXPECT_GT(*s.best_score, 0);
  EXPECT_EQ(read_text(run / "workspace/kernel.cc"), blocked);
}

}  // namespace
}  // namespace marathon
