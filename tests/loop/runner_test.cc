// The loop in-process, with a deterministic scripted policy and the tiny task: budgets, goal turns
// and auto-pause, interrupts, goal verbs from another writer, bad tool calls, and the resume paths
// (a tool in flight, a model request in flight).
#include "loop/runner.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "core/checkpoint.h"
#include "core/fold.h"
#include "goal/task_spec.h"
#include "loop/replay.h"
#include "loop/run_setup.h"
#include "loop/run_tools.h"
#include "loop_test_support.h"
#include "policy/replay_policy.h"

namespace marathon {
namespace {

using testing::events_of_type;
using testing::TempDir;

json call(const std::string& id, const std::string& name, const std::string& args) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
}

PolicyReply reply_with(json calls, const std::string& text = "") {
  PolicyReply r;
  r.message = {{"role", "assistant"}, {"content", text}};
  if (!calls.empty()) r.message["tool_calls"] = std::move(calls);
  r.prompt_tokens = 100;
  r.completion_tokens = 10;
  r.provider = "test";
  r.model = "scripted";
  return r;
}

// Answers request n with script(n); counts its calls.
class ScriptedPolicy : public Policy {
 public:
  explicit ScriptedPolicy(std::function<PolicyReply(int)> script) : script_(std::move(script)) {}
  std::string name() const override { return "scripted"; }
  PolicyReply next(const PolicyRequest& req) override {
    last_messages = req.messages;
    last_estimate = req.tokens_estimate;
    last_breakpoints = req.cache_breakpoints;
    requests.push_back(req.messages);
    breakpoints.push_back(req.cache_breakpoints);
    return script_(calls++);
  }
  int calls = 0;
  std::vector<json> requests;  // the messages of every request
  std::vector<std::vector<int64_t>> breakpoints;
  json last_messages;
  int64_t last_estimate = 0;
  std::vector<int64_t> last_breakpoints;

 private:
  std::function<PolicyReply(int)> script_;
};

// A tool with an effect outside the log, so it is not idempotent.
class CountingTool : public Tool {
 public:
  explicit CountingTool(int* runs) : runs_(runs) {}
  std::string name() const override { return "side_effect"; }
  std::string description() const override { return "counts its runs"; }
  json parameters() const override { return {{"type", "object"}}; }
  ToolResult run(const json&, ToolContext&) override {
    ++*runs_;
    return ToolResult{true, "done", "", {}, false, 0};
  }

 private:
  int* runs_;
};

struct Fixture {
  TempDir dir{"runner"};
  std::unique_ptr<EventStore> store;
  ToolRegistry tools = make_run_tools();
  std::filesystem::path run_dir;

  explicit Fixture(std::function<void(NewRunOptions&)> adjust = {}) {
    NewRunOptions o;
    o.run_dir = dir / "run";
    o.policy = "llm";
    o.model = "test:scripted";
    if (adjust) adjust(o);
    run_dir = o.run_dir;
    store = create_run(load_task(testing::tiny_task()), o);
  }
  std::vector<Event> events() { return store->read(); }
};

TEST(Runner, StopsCleanlyWhenTheToolCallBudgetIsUsedUpAndWarnsBefore) {
  Fixture f([](NewRunOptions& o) { o.max_tool_calls = 10; });
  ScriptedPolicy policy([](int n) {
    return reply_with({call("c" + std::to_string(n), "note",
                            R"({"kind": "finding", "text": "step )" + std::to_string(n) + "\"}")});
  });
  Runner runner(*f.store, policy, f.tools, f.run_dir);
  RunReport report = runner.run();
  EXPECT_EQ(report.outcome, RunOutcome::kFinished);
  EXPECT_EQ(report.reason, "budget");
  State s = fold(f.events());
  EXPECT_EQ(s.used.tool_calls, 10);
  EXPECT_TRUE(s.done);
  auto warned = events_of_type(f.events(), events::BudgetWarned::kType);
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].payload["which"], "tool_calls");
  // The model was told, in a user message, before the stop.
  bool told = false;
  for (const json& m : policy.last_messages) {
    told = told || (m["role"] == "user" &&
                    m["content"].get<std::string>().find("Budget note") != std::string::npos);
  }
  EXPECT_TRUE(told);
}

TEST(Runner, AStepIsThreeTransactionsTheResponseAndItsFirstToolStartedShareOne) {
  Fixture f;
  ScriptedPolicy policy([](int n) {
    if (n == 5) return reply_with({call("f", "finish", R"({"summary": "done"})")});
    return reply_with(
        {call("c" + std::to_string(n), "note", R"({"kind": "finding", "text": "x"})")});
  });
  Runner runner(*f.store, policy, f.tools, f.run_dir);
  EXPECT_EQ(runner.run().reason, "finish");
  // model.request | model.response + tool.started | tool.finished + effects, six steps.
  EXPECT_EQ(runner.stats().transactions, 18);
  std::vector<Event> events = f.events();
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    if (events[i].type == events::ModelResponse::kType) {
      EXPECT_EQ(events[i + 1].type, events::ToolStarted::kType) << "seq " << events[i].seq;
      EXPECT_EQ(events[i + 1].payload["turn"],
                fold(std::vector<Event>(events.begin(), events.begin() + i + 1)).used.model_calls);
    }
  }
}

TEST(Runner, AResponseThatUsesUpTheBudgetIsLoggedButItsCallsDoNotRun) {
  Fixture f([](NewRunOptions& o) { o.max_tokens = 250; });  // each reply uses 110 tokens
  ScriptedPolicy policy([](int n) {
    return reply_with(
        {call("c" + std::to_string(n), "note", R"({"kind": "finding", "text": "x"})")});
  });
  Runner runner(*f.store, policy, f.tools, f.run_dir);
  RunReport report = runner.run();
  EXPECT_EQ(report.reason, "budget");
  State s = fold(f.events());
  EXPECT_EQ(s.used.model_calls, 3);
  EXPECT_EQ(s.used.tool_calls, 2) << "the third reply crossed the limit: its call did not run";
  EXPECT_TRUE(s.in_flight.empty());
}

TEST(Runner, StartsGoalTurnsWhenThePolicyStopsAndPausesTheGoalAfterTurnsWithoutProgress) {
  Fixture f([](NewRunOptions& o) { o.goal_auto_pause_turns = 3; });
  ScriptedPolicy policy([](int) { return reply_with(json::array(), "I am done thinking."); });
  Runner runner(*f.store, policy, f.tools, f.run_dir);
  RunReport report = runner.run();
  EXPECT_EQ(report.outcome, RunOutcome::kPaused);
  EXPECT_EQ(report.reason, "goal_auto_paused");
  EXPECT_EQ(policy.calls, 3);  // turn 1, then two goal turns; the third stop pauses the goal
  std::vector<Event> events = f.events();
  int goal_turns = 0;
  for (const Event& e : events_of_type(events, "user.message")) {
    goal_turns += e.payload["reason"] == "goal_turn";
  }
  EXPECT_EQ(goal_turns, 2);
  auto changed = events_of_type(events, events::GoalChanged::kType);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].payload["verb"], "auto_pause");
  State s = fold(events);
  EXPECT_EQ(s.goal.status, GoalStatus::kPaused);
  EXPECT_TRUE(s.paused);
  EXPECT_FALSE(s.done);
}

TEST(Runner, MalformedToolCallsBecomeErrorMessagesForTheModelNotCrashes) {
  Fixture f;
  ScriptedPolicy policy([](int n) {
    if (n == 0) {
      return reply_with({call("a", "note", "{not json"), call("b", "frobnicate", "{}"),
                         call("c", "note", R"({"kind": "rumour", "text": "x"})"),
                         call("d", "note", R"({"text": "missing kind"})")});
    }
    return reply_with({call("z", "finish", R"({"summary": "done"})")});
  });
  Runner runner(*f.store, policy, f.tools, f.run_dir);
  RunReport report = runner.run();
  EXPECT_EQ(report.reason, "finish");
  std::map<std::string, std::string> out;
  for (const Event& e : events_of_type(f.events(), events::ToolFinished::kType)) {
    out[e.payload["call_id"]] = e.payload["output"];
    if (e.payload["call_id"] != "z") {
      EXPECT_FALSE(e.payload["ok"].get<bool>());
    }
  }
  EXPECT_NE(out["a"].find("not valid JSON"), std::string::npos) << out["a"];
  EXPECT_NE(out["b"].find("unknown tool \"frobnicate\""), std::string::npos) << out["b"];
  EXPECT_NE(out["b"].find("evaluate"), std::string::npos) << "lists the valid tools: " << out["b"];
  EXPECT_NE(out["c"].find("is not one of"), std::string::npos) << out["c"];
  EXPECT_NE(out["d"].find("arguments.kind: required property is missing"), std::string::npos)
      << out["d"];
  // The second request carried every error back to the model, answering each call id.
  int answered = 0;
  for (const json& m : policy.last_messages) {
    if (m["role"] == "tool") ++answered;
  }
  EXPECT_EQ(answered, 4);
}

TEST(Runner, InterruptPausesAtTheNextStepBoundary) {
  Fixture f;
  ScriptedPolicy policy([](int n) {
    return reply_with(
        {call("c" + std::to_string(n), "note", R"({"kind": "finding", "text": "x"})")});
  });
  RunnerHooks hooks;
  hooks.interrupted = [&] { return policy.calls >= 2; };
  Runner runner(*f.store, policy, f.tools, f.run_dir, hooks);
  RunReport report = runner.run();
  EXPECT_EQ(report.outcome, RunOutcome::kPaused);
  EXPECT_EQ(report.reason, "interrupted");
  State s = fold(f.events());
  EXPECT_TRUE(s.paused);
  EXPECT_TRUE(s.in_flight.empty()) << "no action is left half done";
  // The signal came while the second reply was awaited: the reply is logged, its call waits for
  // resume (it runs then without asking the model again).
  EXPECT_EQ(s.used.tool_calls, 1);
  EXPECT_EQ(s.used.model_calls, 2);
}

TEST(Runner, NoticesAGoalPauseAppendedByAnotherWriterAtItsNextStep) {
  Fixture f;
  std::unique_ptr<EventStore> other;
  ScriptedPolicy policy([&](int n) {
    if (n == 1) {  // `marathon goal pause` from another process, while the run goes
      other = EventStore::open((f.run_dir / "events.db").string(), EventStore::Mode::kOpen);
      other->append({events::GoalChanged::kType, {{"verb", "pause"}, {"status", "paused"}}});
    }
    return reply_with(
        {call("c" + std::to_string(n), "note", R"({"kind": "finding", "text": "x"})")});
  });
  Runner runner(*f.store, policy, f.tools, f.run_dir);
  RunReport report = runner.run();
  EXPECT_EQ(report.reason, "goal_paused");
  EXPECT_EQ(policy.calls, 2);
}

TEST(Runner, ResumeReportsAnInFlightNonIdempotentToolAsInterruptedWithoutRerunningIt) {
  Fixture f;
  int runs = 0;
  f.tools.add(std::make_unique<CountingTool>(&runs));
  // What a killed runner left: the response and tool.started, no tool.finished.
  f.store->append({events::ModelRequest::kType, {{"turn", 1}}});
  f.store->append(
      {events::ModelResponse::kType,
       {{"message",
         {{"role", "assistant"},
          {"content", ""},
          {"tool_calls", {{{"id", "k1"}, {"name", "side_effect"}, {"arguments", "{}"}}}}}},
        {"usage", {{"prompt_tokens", 1}, {"completion_tokens", 1}}}}});
  f.store->append({events::ToolStarted::kType,
                   {{"call_id", "k1"}, {"name", "side_effect"}, {"arguments", json::object()}}});
  ScriptedPolicy policy(
      [](int) { return reply_with({call("f", "finish", R"({"summary": "ok"})")}); });
  Runner runner(*f.store, policy, f.tools, f.run_dir);
  runner.run();
  EXPECT_EQ(runs, 0);
  auto finished = events_of_type(f.events(), events::ToolFinished::kType);
  ASSERT_GE(finished.size(), 1u);
  EXPECT_EQ(finished[0].payload["call_id"], "k1");
  EXPECT_TRUE(finished[0].payload.value("interrupted", false));
  EXPECT_NE(finished[0].payload["output"].get<std::string>().find("interrupted"),
            std::string::npos);
  EXPECT_EQ(policy.calls, 1);
}

TEST(Runner, ResumeContinuesTheUnfinishedCallsOfALoggedResponseWithoutAskingTheModel) {
  Fixture f;
  f.store->append({events::ModelRequest::kType, {{"turn", 1}}});
  f.store->append(
      {events::ModelResponse::kType,
       {{"message",
         {{"role", "assistant"},
          {"content", ""},
          {"tool_calls",
           {{{"id", "n1"}, {"name", "note"}, {"arguments", R"({"kind":"finding","text":"a"})"}},
            {{"id", "n2"}, {"name", "note"}, {"arguments", R"({"kind":"finding","text":"b"})"}}}}}},
        {"usage", {{"prompt_tokens", 1}, {"completion_tokens", 1}}}}});
  // n1 finished before the kill; n2 never started.
  f.store->append({events::ToolStarted::kType,
                   {{"call_id", "n1"}, {"name", "note"}, {"arguments", json::object()}}});
  f.store->append({events::ToolFinished::kType,
                   {{"call_id", "n1"}, {"name", "note"}, {"ok", true}, {"output", "noted"}}});
  f.store->append({events::LedgerNoted::kType, {{"kind", "finding"}, {"text", "a"}}});
  ScriptedPolicy policy(
      [](int) { return reply_with({call("f", "finish", R"({"summary": "ok"})")}); });
  Runner runner(*f.store, policy, f.tools, f.run_dir);
  runner.run();
  EXPECT_EQ(policy.calls, 1) << "only the request after n2; the logged response is not re-asked";
  State s = fold(f.events());
  ASSERT_EQ(s.ledger.size(), 2u);
  EXPECT_EQ(s.ledger[1].text, "b");
}

TEST(Runner, AModelRequestInFlightAtAKillIsSentAgainButNotLoggedTwice) {
  Fixture f;
  f.store->append(
      {events::ModelRequest::kType, {{"turn", 1}}});  // the kill hit during the HTTP call
  ScriptedPolicy policy(
      [](int) { return reply_with({call("f", "finish", R"({"summary": "ok"})")}); });
  Runner runner(*f.store, policy, f.tools, f.run_dir);
  runner.run();
  EXPECT_EQ(policy.calls, 1);
  EXPECT_EQ(events_of_type(f.events(), events::ModelRequest::kType).size(), 1u);
  EXPECT_EQ(fold(f.events()).turns, 1);
}

TEST(Runner, AnEvaluatorThatHangsIsKilledAtTheTimeoutAndTheRunGoesOn) {
  Fixture f;
  ScriptedPolicy policy([](int n) {
    if (n == 0) {
      return reply_with({call("e", "evaluate", R"({"strategy": "hang"})")});
    }
    return reply_with({call("f", "finish", R"({"summary": "ok"})")});
  });
  // The tiny evaluator hangs on a line `hang`: write it straight into the workspace, as `run`
  // could.
  {
    std::ofstream out(f.run_dir / "workspace/solution.txt");
    out << "hang\n";
  }
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  EXPECT_EQ(report.reason, "finish");
  auto evals = events_of_type(f.events(), events::EvalFinished::kType);
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_EQ(evals[0].payload["status"], "timeout");
  EXPECT_FALSE(evals[0].payload["result"]["correct"].get<bool>());
  // The changed file was logged before the evaluation (the candidate is what was evaluated).
  State s = fold(f.events());
  EXPECT_EQ(s.candidates.size(), 1u);
  EXPECT_FALSE(s.best_score.has_value());
}

// --- budgets that cannot be skipped, sizes that cannot fit, finish before a result -----------

TEST(Runner, AStepPredictedToJumpPastTheCostLimitGetsTheWrapUpNoteFirst) {
  // 0.35 a call against $1: 70% after two calls, 105% after the third. By the 90% rule alone the
  // note would never be sent; predicted from the calls so far it goes out before the third.
  Fixture f([](NewRunOptions& o) { o.max_cost_usd = 1.0; });
  ScriptedPolicy policy([](int n) {
    PolicyReply r =
        reply_with({call("c" + std::to_string(n), "note", R"({"kind": "finding", "text": "x"})")});
    r.cost_usd = 0.35;
    return r;
  });
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  EXPECT_EQ(report.reason, "budget");
  EXPECT_EQ(policy.calls, 3);
  auto warned = events_of_type(f.events(), events::BudgetWarned::kType);
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].payload["which"], "cost");
  EXPECT_TRUE(warned[0].payload.value("predicted", false));
  bool told = false;
  for (const json& m : policy.last_messages) {
    told = told || (m["role"] == "user" &&
                    m["content"].get<std::string>().find("Budget note: cost") != std::string::npos);
  }
  EXPECT_TRUE(told) << "the third request carries the note";
  // The request carries what the provider sizes the reply and places cache breakpoints by.
  EXPECT_GT(policy.last_estimate, 0);
  EXPECT_EQ(policy.last_breakpoints.front(), 0);
  EXPECT_EQ(policy.last_breakpoints.back(), int64_t(policy.last_messages.size()) - 2);
}

TEST(Runner, CallsTheBudgetForbidsAreAnsweredAsNotRunAndUseNothing) {
  Fixture f([](NewRunOptions& o) { o.max_tool_calls = 3; });
  ScriptedPolicy policy([](int n) {
    const std::string a = "a" + std::to_string(n), b = "b" + std::to_string(n);
    return reply_with({call(a, "note", R"({"kind": "finding", "text": "x"})"),
                       call(b, "note", R"({"kind": "finding", "text": "y"})")});
  });
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  EXPECT_EQ(report.reason, "budget");
  std::vector<Event> events = f.events();
  State s = fold(events);
  EXPECT_EQ(s.used.tool_calls, 3);
  auto finished = events_of_type(events, events::ToolFinished::kType);
  ASSERT_EQ(finished.size(), 4u) << "every call of every response has a result";
  EXPECT_TRUE(finished[3].payload.value("not_run", false));
  EXPECT_FALSE(finished[3].payload["ok"].get<bool>());
  EXPECT_NE(finished[3].payload["output"].get<std::string>().find("not run"), std::string::npos);
  EXPECT_EQ(events_of_type(events, events::ToolStarted::kType).size(), 3u)
      << "the fourth never started";
  EXPECT_EQ(events.back().type, events::RunFinished::kType);
}

TEST(Runner, AContextLengthErrorCompactionCannotFixPausesAsContextTooSmall) {
  Fixture f;
  ScriptedPolicy policy([](int) {
    PolicyReply r;
    r.provider = "test";
    r.error = json{{"kind", "context_length"},
                   {"message", "This model's maximum context length is 512 tokens"},
                   {"http_status", 400}};
    return r;
  });
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  EXPECT_EQ(report.outcome, RunOutcome::kFailed);
  EXPECT_EQ(report.reason, "context_too_small");
  EXPECT_EQ(policy.calls, 1) << "the same prompt is not sent again";
  auto paused = events_of_type(f.events(), events::RunPaused::kType);
  ASSERT_EQ(paused.size(), 1u);
  const std::string why = paused[0].payload["message"];
  EXPECT_NE(why.find("--context-window"), std::string::npos) << why;
  EXPECT_NE(why.find("maximum context length is 512"), std::string::npos) << why;
}

TEST(Runner, AFixedPromptLargerThanTheWindowFailsAtTheFirstStepSayingSo) {
  Fixture f([](NewRunOptions& o) { o.context_window = 1024; });  // rules and tools alone are more
  ScriptedPolicy policy([](int) { return reply_with({}, "never asked"); });
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  EXPECT_EQ(report.outcome, RunOutcome::kFailed);
  EXPECT_EQ(report.reason, "context_overflow");
  EXPECT_EQ(policy.calls, 0) << "nothing is sent";
  auto paused = events_of_type(f.events(), events::RunPaused::kType);
  ASSERT_EQ(paused.size(), 1u);
  const std::string why = paused[0].payload["message"];
  EXPECT_NE(why.find("fixed part"), std::string::npos) << why;
  EXPECT_NE(why.find("--context-window"), std::string::npos) << why;
  EXPECT_TRUE(events_of_type(f.events(), events::ModelRequest::kType).empty());
}

TEST(Runner, FinishBeforeAnyCorrectEvaluationIsRefusedAndTheRunGoesOn) {
  TempDir dir("runner-finish");
  NewRunOptions o;
  o.run_dir = dir / "run";
  o.policy = "llm";
  o.model = "test:scripted";
  o.max_tool_calls = 3;
  TaskSpec task = load_task(testing::tiny_task());
  task.finish_needs_correct_evaluation = true;  // the default for real tasks
  auto store = create_run(task, o);
  ToolRegistry tools = make_run_tools();
  ScriptedPolicy policy([](int n) {
    return reply_with({call("f" + std::to_string(n), "finish", R"({"summary": "done"})")});
  });
  RunReport report = Runner(*store, policy, tools, o.run_dir).run();
  EXPECT_EQ(report.reason, "budget");
  auto finished = events_of_type(store->read(), events::ToolFinished::kType);
  ASSERT_EQ(finished.size(), 3u);
  EXPECT_FALSE(finished[0].payload["ok"].get<bool>());
  EXPECT_NE(finished[0].payload["output"].get<std::string>().find("finish refused"),
            std::string::npos);
}

// --- replay in every case ------------------------------------------------------------------------

// A policy over the Fixture's store: appends `external` before answering turn `at` (as another
// writer would while the model thinks), answers summariser calls with a summary, and fails turns
// in `failing` with a transport error.
class ExternalPolicy : public Policy {
 public:
  ExternalPolicy(EventStore* store, int at, NewEvent external, std::set<int> failing = {})
      : store_(store), at_(at), external_(std::move(external)), failing_(std::move(failing)) {}
  std::string name() const override { return "scripted"; }
  PolicyReply next(const PolicyRequest& req) override {
    if (req.purpose == "compaction") {
      PolicyReply r = reply_with({}, "Summary: notes written so far; nothing evaluated yet.");
      return r;
    }
    const int n = turns++;
    if (n == at_ && store_ != nullptr) store_->append(external_);
    if (failing_.count(n)) {
      PolicyReply r;
      r.provider = "test";
      r.error = json{{"kind", "transport"}, {"message", "connection refused"}};
      return r;
    }
    if (n >= 8)
      return reply_with({call("f" + std::to_string(n), "finish", R"({"summary": "ok"})")});
    return reply_with({call("c" + std::to_string(n), "note",
                            R"({"kind": "finding", "text": "step )" + std::to_string(n) + "\"}")});
  }
  int turns = 0;

 private:
  EventStore* store_;
  int at_;
  NewEvent external_;
  std::set<int> failing_;
};

// Replays the Fixture's run into a new folder and returns the replay's final state.
State replay_of(Fixture& f, ReplayPolicy** served = nullptr) {
  std::vector<Event> original;
  std::unique_ptr<EventStore> from;
  const std::filesystem::path to = f.dir / "replay";
  auto store = create_replay_run(f.run_dir, to, &original, &from);
  static std::unique_ptr<ReplayPolicy> policy;
  policy = std::make_unique<ReplayPolicy>(original);
  State replayed;
  drive_replay(*store, to, original, *from, *policy, /*quiet=*/true, &replayed);
  if (served) *served = policy.get();
  return replayed;
}

TEST(Replay, AManualCompactionIsReplayedAtItsStepWithItsLoggedSummary) {
  Fixture f;
  ExternalPolicy policy(f.store.get(), 3,
                        {events::CompactionRequested::kType, {{"trigger", "manual"}}});
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  ASSERT_EQ(report.reason, "finish");
  State original = fold(f.events());
  ASSERT_EQ(original.compaction.compactions, 1);
  ReplayPolicy* served = nullptr;
  State replayed = replay_of(f, &served);
  EXPECT_EQ(comparable_state(replayed), comparable_state(original));
  EXPECT_EQ(served->served(), served->available());
}

TEST(Replay, ARunPausedOnModelErrorsAndResumedReplaysToTheSameEnd) {
  Fixture f;
  ExternalPolicy first(nullptr, -1, {}, {2, 3, 4});
  RunReport paused = Runner(*f.store, first, f.tools, f.run_dir).run();
  ASSERT_EQ(paused.reason, "model_unavailable");
  f.store->append({events::RunResumed::kType, {{"reason", "resume"}}});
  ExternalPolicy second(nullptr, -1, {});
  second.turns = first.turns;
  RunReport report = Runner(*f.store, second, f.tools, f.run_dir).run();
  ASSERT_EQ(report.reason, "finish");
  State original = fold(f.events());
  State replayed = replay_of(f);
  EXPECT_EQ(comparable_state(replayed), comparable_state(original));
  EXPECT_TRUE(replayed.done);
}

TEST(Replay, AGoalPauseAndResumeFromAnotherWriterAreReplayed) {
  Fixture f;
  ExternalPolicy policy(
      f.store.get(), 2,
      {events::GoalChanged::kType, {{"verb", "pause"}, {"objective", "o"}, {"status", "paused"}}});
  RunReport paused = Runner(*f.store, policy, f.tools, f.run_dir).run();
  ASSERT_EQ(paused.reason, "goal_paused");
  f.store->append(
      {events::GoalChanged::kType, {{"verb", "resume"}, {"objective", "o"}, {"status", "active"}}});
  f.store->append({events::RunResumed::kType, {{"reason", "resume"}}});
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  ASSERT_EQ(report.reason, "finish");
  State original = fold(f.events());
  State replayed = replay_of(f);
  EXPECT_EQ(comparable_state(replayed), comparable_state(original));
}

// --- calls after finish, paused turns ----------------------------------------------------------

TEST(Runner, CallsAfterAnAcceptedFinishInItsTurnAreAnsweredAsNotRunAndNeverRun) {
  Fixture f;
  int side_effects = 0;
  f.tools.add(std::make_unique<CountingTool>(&side_effects));
  ScriptedPolicy policy([](int n) {
    if (n == 0) {
      return reply_with(
          {call("w", "write_file", R"({"path": "solution.txt", "content": "value = 3\n"})")});
    }
    return reply_with(
        {call("e", "evaluate", R"({"strategy": "value 3"})"),
         call("f", "finish", R"({"summary": "value 3 it is"})"),
         call("late", "write_file", R"({"path": "solution.txt", "content": "value = 9\n"})"),
         call("fx", "side_effect", "{}")});
  });
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  EXPECT_EQ(report.reason, "finish");
  EXPECT_EQ(policy.calls, 2);
  EXPECT_EQ(side_effects, 0);
  EXPECT_EQ(testing::read_text(f.run_dir / "workspace/solution.txt"), "value = 3\n")
      << "the write after finish ran";
  std::vector<Event> events = f.events();
  State s = fold(events);
  EXPECT_TRUE(s.in_flight.empty());
  EXPECT_EQ(s.used.tool_calls, 3) << "write, evaluate, finish";
  std::set<std::string> started;
  for (const Event& e : events_of_type(events, events::ToolStarted::kType)) {
    started.insert(e.payload["call_id"].get<std::string>());
  }
  EXPECT_EQ(started, (std::set<std::string>{"w", "e", "f"}));
  std::map<std::string, json> finished;
  for (const Event& e : events_of_type(events, events::ToolFinished::kType)) {
    finished[e.payload["call_id"].get<std::string>()] = e.payload;
  }
  ASSERT_EQ(finished.size(), 5u) << "every call of the turn has a result";
  for (const char* id : {"late", "fx"}) {
    EXPECT_TRUE(finished[id].value("not_run", false)) << id;
    EXPECT_FALSE(finished[id]["ok"].get<bool>()) << id;
    EXPECT_NE(finished[id]["output"].get<std::string>().find("not run"), std::string::npos) << id;
  }
  EXPECT_FALSE(finished["f"].value("not_run", false));
  // The answers come before run.finished, in the finish call's transaction, and nothing after.
  ASSERT_EQ(events.back().type, events::RunFinished::kType);
  EXPECT_EQ(events.back().payload["reason"], "finish");
  EXPECT_EQ(events[events.size() - 2].payload["call_id"], "fx");
  EXPECT_EQ(events[events.size() - 3].payload["call_id"], "late");
  // The replay answers them the same way.
  ReplayPolicy* served = nullptr;
  State replayed = replay_of(f, &served);
  EXPECT_EQ(comparable_state(replayed), comparable_state(s));
  EXPECT_EQ(served->served(), served->available());
  EXPECT_EQ(testing::read_text(f.dir / "replay/workspace/solution.txt"), "value = 3\n");
}

TEST(Runner, ATurnTheProviderPausedIsSentBackLastAsItIsWithNoGoalTurnOrNote) {
  Fixture f;
  const std::string paused_text = "Thinking about the value; more to come.";
  ScriptedPolicy policy([&](int n) {
    if (n == 0) {
      PolicyReply r = reply_with({}, paused_text);
      r.finish_reason = events::ModelResponse::kFinishPauseTurn;
      return r;
    }
    return reply_with({call("f", "finish", R"({"summary": "done"})")});
  });
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  EXPECT_EQ(report.reason, "finish");
  ASSERT_EQ(policy.calls, 2);
  ASSERT_EQ(policy.requests.size(), 2u);
  const json& first = policy.requests[0];
  const json& second = policy.requests[1];
  // The second request is the first without its live tail, then the paused turn as it is.
  ASSERT_EQ(second.size(), first.size());
  for (size_t i = 0; i + 1 < first.size(); ++i) EXPECT_EQ(second[i], first[i]) << i;
  EXPECT_EQ(first.back()["role"], "user") << "the live tail";
  EXPECT_EQ(second.back(), json({{"role", "assistant"}, {"content", paused_text}}));
  EXPECT_EQ(policy.breakpoints[1].back(), int64_t(second.size()) - 1);
  std::vector<Event> events = f.events();
  EXPECT_TRUE(events_of_type(events, events::UserMessage::kType).empty())
      << "no goal turn, no note: the model carries on";
  auto requests = events_of_type(events, events::ModelRequest::kType);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].payload["turn"], requests[0].payload["turn"]) << "the same goal turn";
  EXPECT_EQ(fold(events).goal.turns_without_progress, 1);
  // The replay sends the same prompts (their hashes are logged) from the logged responses.
  ReplayPolicy* served = nullptr;
  State replayed = replay_of(f, &served);
  EXPECT_EQ(comparable_state(replayed), comparable_state(fold(events)));
  EXPECT_EQ(served->served(), served->available());
  auto replay_requests =
      events_of_type(testing::load_events(f.dir / "replay"), events::ModelRequest::kType);
  ASSERT_EQ(replay_requests.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(replay_requests[i].payload["prompt_sha"], requests[i].payload["prompt_sha"]) << i;
  }
}

TEST(Runner, AProviderThatPausesEveryTurnGetsAGoalTurnAfterTheCapAndTheGoalLimitStopsTheRun) {
  Fixture f([](NewRunOptions& o) { o.goal_auto_pause_turns = 2; });
  ScriptedPolicy policy([&](int) {
    PolicyReply r = reply_with({}, "still thinking");
    r.finish_reason = events::ModelResponse::kFinishPauseTurn;
    return r;
  });
  RunReport report = Runner(*f.store, policy, f.tools, f.run_dir).run();
  EXPECT_EQ(report.outcome, RunOutcome::kPaused);
  EXPECT_EQ(report.reason, "goal_auto_paused");
  std::vector<Event> events = f.events();
  // Each goal turn: kMaxPausedTurnsInARow paused turns carried on, then one that counts as a stop.
  auto goal_turns = events_of_type(events, events::UserMessage::kType);
  EXPECT_EQ(goal_turns.size(), 1u);
  EXPECT_EQ(policy.calls, 2 * (kMaxPausedTurnsInARow + 1));
  EXPECT_EQ(fold(events).goal.turns_without_progress, 2);
  ReplayPolicy* served = nullptr;
  State replayed = replay_of(f, &served);
  EXPECT_EQ(comparable_state(replayed), comparable_state(fold(events)));
  EXPECT_EQ(served->served(), served->available());
}

}  // namespace
}  // namespace marathon

namespace marathon {
namespace {

TEST(Runner, StartsFromTheNewestFoldCheckpointAndFoldsOnlyTheEventsAfterIt) {
  Fixture f([](NewRunOptions& o) { o.max_tool_calls = 6; });
  ScriptedPolicy policy([](int n) {
    return reply_with({call("c" + std::to_string(n), "note",
                            R"({"kind": "finding", "text": "step )" + std::to_string(n) + "\"}")});
  });
  ASSERT_EQ(Runner(*f.store, policy, f.tools, f.run_dir).run().reason, "budget");
  const std::vector<Event> events = f.events();
  const State whole = fold(events);
  {
    Runner fresh(*f.store, policy, f.tools, f.run_dir);
    EXPECT_EQ(fresh.stats().checkpoint_seq, 0);  // too short a log for the runner to write one
    EXPECT_EQ(fresh.stats().events_folded_at_start, static_cast<int64_t>(events.size()));
  }
  // A checkpoint at every seq in turn (mid-turn ones included: a response whose calls have not
  // all finished, a tool call in flight): the runner starts from it, folds only what follows, and
  // holds the state of the whole fold, the turn tracker and compaction log with it.
  for (size_t k = 1; k <= events.size(); ++k) {
    write_checkpoint(*f.store, fold(std::vector<Event>(events.begin(), events.begin() + k)));
    Runner r(*f.store, policy, f.tools, f.run_dir);
    EXPECT_EQ(r.stats().checkpoint_seq, events[k - 1].seq);
    EXPECT_EQ(r.stats().events_folded_at_start, static_cast<int64_t>(events.size() - k));
    ASSERT_TRUE(r.state() == whole) << "from the checkpoint at seq " << events[k - 1].seq;
  }
}

}  // namespace
}  // namespace marathon
