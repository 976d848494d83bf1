// fold() without I/O: events built in memory, state checked field by field.
#include "core/fold.h"

#include <gtest/gtest.h>

namespace marathon {
namespace {

// Builds a log in memory with dense seqs and a controllable clock.
class Log {
 public:
  Log& add(const std::string& type, json payload, int64_t at_s = -1) {
    Event e;
    e.seq = static_cast<int64_t>(events_.size()) + 1;
    e.id = "e" + std::to_string(e.seq);
    e.type = type;
    if (at_s >= 0) clock_us_ = at_s * 1000000;
    e.recorded_at_us = clock_us_;
    e.payload = std::move(payload);
    events_.push_back(std::move(e));
    return *this;
  }
  Log& created(const std::string& direction = "max", int64_t at_s = 0) {
    return add(events::RunCreated::kType,
               {{"run_id", "run-1"},
                {"task", {{"name", "cpu-matmul"}}},
                {"task_dir", "tasks/cpu-matmul"},
                {"goal",
                 {{"objective", "faster matmul"},
                  {"metric", "speedup"},
                  {"direction", direction},
                  {"target", 4.0}}},
                {"budget", {{"max_tool_calls", 50}, {"max_wall_s", 3600}, {"max_cost_usd", 2.5}}},
                {"config", {{"policy", "search"}}}},
               at_s);
  }
  Log& eval(const std::string& cand, double score, bool correct = true,
            json violations = json::array(), const std::string& status = "ok",
            bool cached = false) {
    return add(events::EvalFinished::kType, {{"candidate", cand},
                                             {"cache_key", "key-" + cand},
                                             {"cached", cached},
                                             {"status", status},
                                             {"result",
                                              {{"correct", correct},
                                               {"score", score},
                                               {"violations", violations},
                                               {"metrics", {{"speedup", score}}}}},
                                             {"elapsed_s", 3.0},
                                             {"gpu_s", 2.0},
                                             {"strategy", "tile " + cand}});
  }
  const std::vector<Event>& events() const { return events_; }
  State fold() const { return marathon::fold(events_); }

 private:
  std::vector<Event> events_;
  int64_t clock_us_ = 0;
};

TEST(Fold, EmptyLogIsAnEmptyState) {
  State s = fold({});
  EXPECT_FALSE(s.created);
  EXPECT_EQ(s.last_seq, 0);
  EXPECT_FALSE(s.done);
}

TEST(Fold, RunCreatedSetsGoalLimitsTaskAndConfig) {
  State s = Log().created().fold();
  EXPECT_TRUE(s.created);
  EXPECT_EQ(s.run_id, "run-1");
  EXPECT_EQ(s.goal.objective, "faster matmul");
  EXPECT_EQ(s.goal.metric, "speedup");
  EXPECT_EQ(s.goal.target, 4.0);
  EXPECT_EQ(s.limits.max_tool_calls, 50);
  EXPECT_EQ(s.limits.max_cost_usd, 2.5);
  EXPECT_EQ(s.task["name"], "cpu-matmul");
  EXPECT_EQ(s.config["policy"], "search");
  EXPECT_EQ(s.config["task_dir"], "tasks/cpu-matmul");
}

TEST(Fold, ModelResponsesAccumulateCallsTokensAndCost) {
  State s =
      Log()
          .created()
          .add(events::ModelRequest::kType, {{"turn", 1}})
          .add(events::ModelResponse::kType,
               {{"usage", {{"prompt_tokens", 100}, {"completion_tokens", 20}}}, {"cost_usd", 0.01}})
          .add(events::ModelResponse::kType,
               {{"usage", {{"prompt_tokens", 50}, {"completion_tokens", 5}}},
                {"cost_usd", 0.02},
                {"error", {{"kind", "bad_json"}, {"message", "x"}}}})
          .fold();
  EXPECT_EQ(s.used.model_calls, 2);
  EXPECT_EQ(s.used.prompt_tokens, 150);
  EXPECT_EQ(s.used.completion_tokens, 25);
  EXPECT_DOUBLE_EQ(s.used.cost_usd, 0.03);
  EXPECT_EQ(s.turns, 1);
}

TEST(Fold, PromptCacheReadsAndWritesAreSummedApart) {
  State s = Log()
                .created()
                .add(events::ModelResponse::kType, {{"usage",
                                                     {{"prompt_tokens", 1000},
                                                      {"completion_tokens", 20},
                                                      {"cache_read_tokens", 900},
                                                      {"cache_write_tokens", 50}}}})
                .add(events::ModelResponse::kType, {{"usage",
                                                     {{"prompt_tokens", 1100},
                                                      {"completion_tokens", 20},
                                                      {"cache_read_tokens", 1000},
                                                      {"cache_write_tokens", -7}}}})
                .fold();
  EXPECT_EQ(s.used.prompt_tokens, 2100);
  EXPECT_EQ(s.used.cache_read_tokens, 1900);
  EXPECT_EQ(s.used.cache_write_tokens, 50) << "a negative count adds nothing";
}

TEST(Fold, ACallTheRunEndedBeforeUsesNoToolCall) {
  State s =
      Log()
          .created()
          .add(events::ToolFinished::kType, {{"call_id", "a"}, {"name", "note"}, {"ok", true}})
          .add(events::ToolFinished::kType,
               {{"call_id", "b"}, {"name", "note"}, {"ok", false}, {"not_run", true}})
          .fold();
  EXPECT_EQ(s.used.tool_calls, 1);
  EXPECT_EQ(s.tool_calls_by_name, (std::map<std::string, int64_t>{{"note", 2}}));
}

TEST(Fold, StartedToolWithoutFinishIsInFlight) {
  State s = Log()
                .created()
                .add(events::ToolStarted::kType,
                     {{"call_id", "a"}, {"name", "run"}, {"arguments", {{"cmd", "make"}}}})
                .add(events::ToolStarted::kType,
                     {{"call_id", "b"}, {"name", "evaluate"}, {"arguments", json::object()}})
                .add(events::ToolFinished::kType, {{"call_id", "a"},
                                                   {"name", "run"},
                                                   {"ok", true},
                                                   {"output", "ok"},
                                                   {"elapsed_s", 1.0},
                                                   {"gpu_s", 0.5}})
                .fold();
  ASSERT_EQ(s.in_flight.size(), 1u);
  EXPECT_EQ(s.in_flight.at("b").name, "evaluate");
  EXPECT_EQ(s.in_flight.at("b").started_seq, 3);
  EXPECT_EQ(s.used.tool_calls, 1);
  EXPECT_DOUBLE_EQ(s.used.gpu_s, 0.5);
  EXPECT_EQ(s.tool_calls_by_name, (std::map<std::string, int64_t>{{"run", 1}}));
}

TEST(Fold, BestScoreIgnoresIncorrectViolatingAndFailedResults) {
  State s = Log()
                .created()
                .eval("c1", 1.5)
                .eval("c2", 9.0, /*correct=*/false)
                .eval("c3", 8.0, true, json::array({"output aliases input"}))
                .eval("c4", 7.0, true, json::array(), "timeout")
                .eval("c5", 1.2)
                .fold();
  EXPECT_EQ(s.best_score, 1.5);
  EXPECT_EQ(s.best_candidate, "c1");
  EXPECT_EQ(s.evaluations, 5);
  EXPECT_EQ(s.evals_since_improvement, 4);
  ASSERT_EQ(s.ledger.size(), 5u);
  EXPECT_EQ(s.ledger[1].failure, "incorrect");
  EXPECT_NE(s.ledger[2].failure.find("output aliases input"), std::string::npos);
  EXPECT_EQ(s.ledger[3].failure, "timeout");
  EXPECT_EQ(s.ledger[0].kind, LedgerKind::kAttempt);
  EXPECT_EQ(s.ledger[0].text, "tile c1");
  EXPECT_EQ(s.ledger[0].figures["speedup"], 1.5);
}

TEST(Fold, MinDirectionPrefersLowerScores) {
  State s = Log().created("min").eval("a", 5.0).eval("b", 3.0).eval("c", 4.0).fold();
  EXPECT_EQ(s.best_score, 3.0);
  EXPECT_EQ(s.best_candidate, "b");
  EXPECT_EQ(s.evals_since_improvement, 1);
}

TEST(Fold, CachedEvaluationsCountButAreNotExecutedOrCharged) {
  State s = Log().created().eval("a", 2.0).eval("a", 2.0, true, json::array(), "ok", true).fold();
  EXPECT_EQ(s.evaluations, 2);
  EXPECT_EQ(s.evaluations_executed, 1);
  EXPECT_DOUBLE_EQ(s.used.gpu_s, 2.0);
  ASSERT_TRUE(s.eval_cache.count("key-a"));
  EXPECT_EQ(s.eval_cache.at("key-a")["result"]["score"], 2.0);
  EXPECT_EQ(s.eval_cache.at("key-a")["status"], "ok");
}

TEST(Fold, WorkspaceFollowsWritesAndDeletesAndCandidatesSnapshotIt) {
  State s =
      Log()
          .created()
          .add(events::WorkspaceWritten::kType, {{"path", "kernel.cc"}, {"sha", "s1"}, {"size", 3}})
          .add(events::WorkspaceWritten::kType, {{"path", "notes.txt"}, {"sha", "s2"}, {"size", 3}})
          .eval("c1", 1.0)
          .add(events::WorkspaceWritten::kType, {{"path", "kernel.cc"}, {"sha", "s3"}, {"size", 3}})
          .add(events::WorkspaceWritten::kType, {{"path", "notes.txt"}, {"deleted", true}})
          .fold();
  EXPECT_EQ(s.workspace, (std::map<std::string, std::string>{{"kernel.cc", "s3"}}));
  EXPECT_EQ(s.candidates.at("c1"),
            (std::map<std::string, std::string>{{"kernel.cc", "s1"}, {"notes.txt", "s2"}}));
}

TEST(Fold, LedgerNotesKeepTheirKindAndOrder) {
  State s =
      Log()
          .created()
          .add(events::LedgerNoted::kType, {{"kind", "dead_end"}, {"text", "unroll 16 spills"}})
          .eval("c", 1.0)
          .add(events::LedgerNoted::kType, {{"kind", "finding"}, {"text", "bandwidth bound"}})
          .fold();
  ASSERT_EQ(s.ledger.size(), 3u);
  EXPECT_EQ(s.ledger[0].kind, LedgerKind::kDeadEnd);
  EXPECT_EQ(s.ledger[0].seq, 2);
  EXPECT_EQ(s.ledger[2].text, "bandwidth bound");
}

TEST(Fold, CompactionInstallsSummaryAndRemembersNoops) {
  State s = Log()
                .created()
                .add(events::CompactionRequested::kType, {{"trigger", "manual"}})
                .add(events::CompactionProposed::kType,
                     {{"trigger", "manual"}, {"summarized_through", 1}})
                .add(events::CompactionInstalled::kType, {{"trigger", "manual"},
                                                          {"outcome", "compacted"},
                                                          {"summary", "we tried tiling"},
                                                          {"summarized_through", 3},
                                                          {"tokens_before", 9000},
                                                          {"tokens_after", 2000},
                                                          {"source", "model"}})
                .add(events::CompactionInstalled::kType,
                     {{"trigger", "auto"}, {"outcome", "noop"}, {"summarized_through", 3}})
                .fold();
  ASSERT_TRUE((s.compaction.installed_seq != 0));
  EXPECT_EQ(s.compaction.summary, "we tried tiling");
  EXPECT_EQ(s.compaction.summarized_through, 3);
  EXPECT_EQ(s.compaction.installed_seq, 4);
  EXPECT_EQ(s.compaction.compactions, 1);
  EXPECT_EQ(s.compaction.noop_seq, 5);
  EXPECT_EQ(s.compaction.pending_request_seq, 0);
}

TEST(Fold, GoalVerbsChangeStatusEditKeepsProgress) {
  State s =
      Log()
          .created()
          .add(
              events::GoalChanged::kType,
              {{"verb", "set"}, {"objective", "2x"}, {"status", "active"}, {"progress", "started"}})
          .add(events::GoalChanged::kType, {{"verb", "edit"}, {"objective", "3x"}})
          .fold();
  EXPECT_EQ(s.goal.objective, "3x");
  EXPECT_EQ(s.goal.progress, "started");
  EXPECT_EQ(s.goal.status, GoalStatus::kActive);
  State p = Log().created().add(events::GoalChanged::kType, {{"verb", "pause"}}).fold();
  EXPECT_EQ(p.goal.status, GoalStatus::kPaused);
  State c = Log().created().add(events::GoalChanged::kType, {{"verb", "clear"}}).fold();
  EXPECT_EQ(c.goal.status, GoalStatus::kCleared);
  EXPECT_EQ(c.goal.objective, "");
}

TEST(Fold, TurnsWithoutProgressResetOnImprovement) {
  State s = Log()
                .created()
                .add(events::ModelRequest::kType, {{"turn", 1}})
                .add(events::ModelRequest::kType, {{"turn", 1}})
                .add(events::ModelRequest::kType, {{"turn", 2}})
                .fold();
  EXPECT_EQ(s.goal.turns_without_progress, 2);
  Log l = Log().created().add(events::ModelRequest::kType, {{"turn", 1}}).eval("a", 1.0);
  EXPECT_EQ(l.fold().goal.turns_without_progress, 0);
}

// A fork made long after the original's last copied event is charged only its own time.
TEST(Fold, AForksWallTimeCountsFromItsOwnStart) {
  State s = Log()
                .created("max", 100)
                .add(events::ModelRequest::kType, {{"turn", 1}}, 150)  // original: 50 s
                .add(events::RunForked::kType,
                     {{"run_id", "fork-1"}, {"from_run_id", "run-1"}, {"at_seq", 2}}, 2000)
                .add(events::ModelRequest::kType, {{"turn", 2}}, 2007)  // the fork: 7 s
                .fold();
  EXPECT_DOUBLE_EQ(s.used.wall_s, 57.0);
  EXPECT_EQ(s.run_id, "fork-1");
}

// A fork's budget replaces the limits it names and keeps the original's others.
TEST(Fold, AForksBudgetReplacesTheLimitsItNames) {
  State s = Log()
                .created("max", 100)
                .add(events::RunForked::kType,
                     {{"run_id", "fork-1"},
                      {"from_run_id", "run-1"},
                      {"at_seq", 1},
                      {"budget", {{"max_tool_calls", 200}, {"max_gpu_s", 900}}}},
                     200)
                .fold();
  EXPECT_EQ(s.limits.max_tool_calls, 200);
  EXPECT_DOUBLE_EQ(s.limits.max_gpu_s, 900);
  EXPECT_DOUBLE_EQ(s.limits.max_wall_s, 3600);  // the original's
  EXPECT_DOUBLE_EQ(s.limits.max_cost_usd, 2.5);
  EXPECT_THROW(Log()
                   .created()
                   .add(events::RunForked::kType,
                        {{"run_id", "f"}, {"at_seq", 1}, {"budget", {{"max_tool_calls", "many"}}}})
                   .fold(),
               std::exception);
}

TEST(Fold, WallTimeIsTheSumOfActiveSegments) {
  State s = Log()
                .created("max", 100)
                .add(events::ModelRequest::kType, {{"turn", 1}}, 110)
                .add(events::RunPaused::kType, {{"reason", "sigint"}}, 130)  // segment 1: 30 s
                .add(events::GoalChanged::kType, {{"verb", "edit"}, {"objective", "x"}},
                     500)  // while paused
                .add(events::RunResumed::kType, {{"reason", "resume"}}, 1000)
                .add(events::ModelRequest::kType, {{"turn", 2}}, 1010)          // crash after this
                .add(events::RunResumed::kType, {{"reason", "resume"}}, 5000)   // segment 2: 10 s
                .add(events::RunFinished::kType, {{"reason", "finish"}}, 5005)  // segment 3: 5 s
                .fold();
  EXPECT_DOUBLE_EQ(s.used.wall_s, 45.0);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.finish_reason, "finish");
  EXPECT_FALSE(s.paused);
}

// Resumed on another machine whose clock is an hour behind the first one's: the second segment
// counts its own 20 s, not the hour between the clocks.
TEST(Fold, WallTimeOfASegmentOnAMachineWhoseClockIsBehindIsItsOwn) {
  State s = Log()
                .created("max", 10000)
                .add(events::ModelRequest::kType, {{"turn", 1}}, 10100)  // killed after this
                .add(events::RunResumed::kType, {{"reason", "resume"}}, 6500)
                .add(events::ModelRequest::kType, {{"turn", 2}}, 6520)
                .fold();
  EXPECT_DOUBLE_EQ(s.used.wall_s, 120.0);
  State later = Log()
                    .created("max", 10000)
                    .add(events::ModelRequest::kType, {{"turn", 1}}, 10100)
                    .add(events::RunResumed::kType, {{"reason", "resume"}}, 6500)
                    .add(events::ModelRequest::kType, {{"turn", 2}}, 6520)
                    .add(events::RunResumed::kType, {{"reason", "resume"}}, 6600)  // killed again
                    .add(events::RunFinished::kType, {{"reason", "finish"}}, 6605)
                    .fold();
  EXPECT_DOUBLE_EQ(later.used.wall_s, 125.0);
}

TEST(Fold, PauseAndBudgetWarnings) {
  State s =
      Log()
          .created()
          .add(events::BudgetWarned::kType, {{"which", "tool_calls"}, {"used", 45}, {"limit", 50}})
          .add(events::BudgetWarned::kType, {{"which", "tool_calls"}, {"used", 48}, {"limit", 50}})
          .add(events::RunPaused::kType, {{"reason", "sigint"}})
          .fold();
  EXPECT_TRUE(s.paused);
  EXPECT_EQ(s.budget_warnings, std::vector<std::string>{"tool_calls"});
}

TEST(Fold, UnsandboxedSessionsAreRecordedWithTheLastReason) {
  State s =
      Log()
          .created()
          .add(events::SandboxDisabled::kType,
               {{"reason", "no user namespaces"}, {"command", "run"}})
          .add(events::RunResumed::kType, {{"reason", "resume"}})
          .add(events::SandboxDisabled::kType, {{"reason", "requested"}, {"command", "resume"}})
          .fold();
  EXPECT_EQ(s.sandbox_disabled, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(s.sandbox_disabled_reason, "requested");
  EXPECT_EQ(to_json(s)["sandbox"]["enabled"], false);
  EXPECT_EQ(to_json(Log().created().fold())["sandbox"]["enabled"], true);
}

TEST(Fold, UnknownEventTypesAreIgnored) {
  State s = Log().created().add("future.thing", {{"x", 1}}).fold();
  EXPECT_EQ(s.last_seq, 2);
  EXPECT_EQ(s.run_id, "run-1");
}

TEST(Fold, MalformedPayloadNamesSeqTypeAndField) {
  Log l = Log().created().add(events::ToolStarted::kType, {{"name", "run"}});
  try {
    l.fold();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("seq 2"), std::string::npos) << what;
    EXPECT_NE(what.find("tool.started"), std::string::npos) << what;
    EXPECT_NE(what.find("call_id"), std::string::npos) << what;
  }
  EXPECT_THROW(Log().add(events::ModelResponse::kType, {{"cost_usd", "lots"}}).fold(),
               std::invalid_argument);
  EXPECT_THROW(Log().add(events::GoalChanged::kType, {{"verb", "explode"}}).fold(),
               std::invalid_argument);
}

// Converting a count no int64 holds is undefined: such a payload is malformed
// (tests/fuzz/corpus/fold_events/regression-count-out-of-range.jsonl).
TEST(Fold, CountOutOfInt64RangeIsMalformedNamingTheField) {
  Log l;
  l.add(events::RunCreated::kType, {{"run_id", "r"}, {"budget", {{"max_tool_calls", 1e300}}}});
  try {
    l.fold();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_tool_calls' is out of range"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Log().add(events::ModelRequest::kType, {{"turn", -1e19}}).fold(),
               std::invalid_argument);
  EXPECT_THROW(Log().add(events::RunForked::kType, {{"run_id", "r"}, {"at_seq", 9.3e18}}).fold(),
               std::invalid_argument);
  EXPECT_EQ(Log().add(events::ModelRequest::kType, {{"turn", -9.2e18}}).fold().last_goal_turn,
            static_cast<int64_t>(-9.2e18));
}

// The time between two far-apart recorded_at values must not overflow
// (tests/fuzz/corpus/fold_events/regression-extreme-recorded-at.jsonl).
TEST(Fold, WallTimeBetweenExtremeTimestampsDoesNotOverflow) {
  Log l;
  l.add(events::RunCreated::kType, {{"run_id", "r"}});
  l.add(events::RunPaused::kType, json::object());
  std::vector<Event> events = l.events();
  events[0].recorded_at_us = INT64_MIN;
  events[1].recorded_at_us = INT64_MAX;
  State s = fold(events);
  EXPECT_DOUBLE_EQ(s.used.wall_s, 18446744073709.551615);
  events[1].recorded_at_us = INT64_MIN;  // a clock that went back: no time, not negative
  events[0].recorded_at_us = INT64_MAX;
  EXPECT_EQ(fold(events).used.wall_s, 0);
}

TEST(Fold, ForkRecordsNewRunId) {
  State s = Log()
                .created()
                .add(events::RunForked::kType,
                     {{"run_id", "run-2"}, {"from_run_id", "run-1"}, {"at_seq", 1}})
                .fold();
  EXPECT_EQ(s.run_id, "run-2");
  EXPECT_EQ(s.forked_from, "run-1");
}

TEST(StateJson, CarriesTheStatusContractFields) {
  json j = to_json(Log().created().eval("a", 2.0).fold());
  for (const char* k : {"events", "tool_calls", "model_calls", "evaluations", "best_score",
                        "best_candidate", "done", "budget"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["best_score"], 2.0);
  EXPECT_EQ(j["best_candidate"], "a");
  EXPECT_EQ(j["events"], 2);
  EXPECT_EQ(j["budget"]["limits"]["max_tool_calls"], 50);
  EXPECT_TRUE(to_json(State{})["best_score"].is_null());
}

}  // namespace
}  // namespace marathon
