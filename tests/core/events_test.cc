// The typed payloads (core/events.h): round trips, tolerance of unknown members, errors that name
// the type and the field, the enumerations, and the type table that docs/event-log.md repeats.
#include "core/events.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "core/eval_result.h"
#include "core/fold.h"

namespace marathon {
namespace {

using namespace events;
using ::testing::HasSubstr;

Event event_of(const NewEvent& n, int64_t seq = 7) {
  Event e;
  e.seq = seq;
  e.type = n.type;
  e.type_version = n.type_version;
  e.payload = n.payload;
  return e;
}

template <class P>
P round_trip(const P& p) {
  return payload_of<P>(event_of(make_event(p)));
}

TEST(Events, EveryTypeRoundTripsThroughItsJson) {
  RunCreated rc;
  rc.run_id = "r";
  rc.task = {{"name", "t"}};
  rc.task_dir = "/t";
  rc.goal = GoalSpec{"obj", "speedup", Direction::kMin, 2.5};
  rc.budget = BudgetSpec{10, 3600.0, std::nullopt, 1.5, std::nullopt};
  rc.config = {{"policy", "llm"}};
  rc.replay_of = ReplayOf{"r0", "/runs/r0"};
  RunCreated rc2 = round_trip(rc);
  EXPECT_EQ(rc2.run_id, rc.run_id);
  EXPECT_EQ(rc2.goal, rc.goal);
  EXPECT_EQ(rc2.budget, rc.budget);
  EXPECT_EQ(rc2.replay_of, rc.replay_of);
  EXPECT_EQ(json(rc2), json(rc));

  ModelResponse mr;
  mr.message = {{"content", "hi"}};
  mr.usage = {12, 3};
  mr.error = ModelError::make(LlmErrorKind::kContextLength, "too long");
  mr.error->http_status = 400;
  mr.error->extra = {{"retry_after_s", 3}};
  mr.purpose = ModelResponse::kPurposeCompaction;
  mr.scope = CompactionScope{"auto", "soft_threshold", 5, 4, 900};
  ModelResponse mr2 = round_trip(mr);
  EXPECT_EQ(json(mr2), json(mr));
  EXPECT_EQ(mr2.error->kind, LlmErrorKind::kContextLength);
  EXPECT_EQ(mr2.error->http_status, 400);
  EXPECT_EQ(mr2.error->extra["retry_after_s"], 3) << "unknown members of the error are kept";
  EXPECT_EQ(mr2.scope, mr.scope);

  ToolFinished tf{"c1", "run", true, "out", "abc", 1.5, 2.0, true};
  EXPECT_EQ(json(round_trip(tf)), json(tf));
  WorkspaceWritten del;
  del.path = "a.cc";
  del.deleted = true;
  del.source = WorkspaceWritten::kRevert;
  EXPECT_EQ(json(round_trip(del)), json(del));
  EXPECT_FALSE(json(del).contains("sha")) << "a deletion carries no blob";

  GoalChanged gc;
  gc.verb = GoalVerb::kAutoPause;
  gc.status = GoalStatus::kPaused;
  gc.progress = "stuck";
  EXPECT_EQ(json(round_trip(gc)), json(gc));

  CompactionInstalled ci;
  ci.scope = CompactionScope{"manual", "manual_request", 9, 8, 1000};
  ci.outcome = CompactionOutcome::kCompacted;
  ci.summary = "so far";
  ci.source = "structural";
  ci.rejected = "too short";
  EXPECT_EQ(json(round_trip(ci)), json(ci));
}

// The scale-out payloads (executors, branches): their members survive a round trip, a lost job
// given up writes `retry: null`, and an eval.finished of a run without executors reads as before.
TEST(Events, ExecutorAndBranchPayloadsRoundTrip) {
  EvalFinished ef;
  ef.candidate = "c";
  ef.cache_key = "k";
  ef.cached = true;
  ef.shared = true;
  ef.status = EvalStatus::kTimeout;
  ef.executor = ExecutorRef{"ray://h:8265", "marathon-r-7-0", "10.0.0.3"};
  EvalFinished ef2 = round_trip(ef);
  EXPECT_EQ(json(ef2), json(ef));
  EXPECT_TRUE(ef2.shared);
  EXPECT_EQ(ef2.executor, ef.executor);
  EvalFinished plain = round_trip(EvalFinished{"c"});
  EXPECT_FALSE(plain.shared);
  EXPECT_FALSE(plain.executor);
  EXPECT_FALSE(json(plain).contains("executor"));

  EvalSubmitted sub{"ray://h:8265", "marathon-r-7-1", 1, "k", "c", "marathon eval t", 1};
  EXPECT_EQ(json(round_trip(sub)), json(sub));

  ExecutorJobLost lost;
  lost.executor = "ray://h:8265";
  lost.submission_id = "marathon-r-7-1";
  lost.attempt = 1;
  lost.reason = "worker died";
  lost.logs_tail = "...";
  EXPECT_TRUE(json(lost).at("retry").is_null()) << "given up: retry is null";
  EXPECT_FALSE(round_trip(lost).retry);
  lost.retry = "marathon-r-7-2";
  lost.node = "10.0.0.3";
  lost.retry_node = "10.0.0.4";
  EXPECT_EQ(json(round_trip(lost)), json(lost));
  EXPECT_EQ(round_trip(lost).retry_node, "10.0.0.4");

  ExecutorSlotQuarantined q;
  q.slot = "gpu1";
  q.faults_in_a_row = 2;
  q.last_status = EvalStatus::kTimeout;
  q.healthy_slots = 3;
  EXPECT_EQ(json(round_trip(q)), json(q));
  EXPECT_EQ(json(q).at("last_status"), "timeout");
  EXPECT_THROW(payload_of<ExecutorSlotQuarantined>(event_of(
                   {ExecutorSlotQuarantined::kType, {{"slot", "gpu0"}, {"last_status", "meh"}}})),
               std::invalid_argument);

  CandidateImported imp;
  imp.candidate = "abc";
  imp.files = {{"solution.txt", "0123"}, {"sub/a.h", "4567"}};
  imp.from_branch = 2;
  imp.score = 1.5;
  EXPECT_EQ(json(round_trip(imp)), json(imp));
  EXPECT_EQ(round_trip(imp).files, imp.files);
  EXPECT_THROW(payload_of<CandidateImported>(event_of(
                   {CandidateImported::kType, {{"candidate", "c"}, {"files", {{"a", 1}}}}})),
               std::invalid_argument);

  LedgerNoted copy{LedgerKind::kDeadEnd, "[branch 1] x", 1, 12};
  EXPECT_EQ(json(round_trip(copy)), json(copy));
  LedgerNoted own = round_trip(LedgerNoted{LedgerKind::kFinding, "y"});
  EXPECT_FALSE(own.from_branch);
  EXPECT_FALSE(json(own).contains("from_branch"));
}

// Prompt-cache counts, a call the run ended before and a predicted budget note: written only when
// set (a log without them reads as before), and read back.
TEST(Events, CacheUsageNotRunAndPredictedRoundTripAndStayOutWhenUnset) {
  ModelResponse mr;
  mr.message = {{"content", "x"}, {"thinking_blocks", json::array({{{"type", "thinking"}}})}};
  mr.usage = {1000, 20, 900, 50};
  const json written = mr;
  EXPECT_EQ(written["usage"]["cache_read_tokens"], 900);
  EXPECT_EQ(written["usage"]["cache_write_tokens"], 50);
  ModelResponse back = round_trip(mr);
  EXPECT_EQ(back.usage, mr.usage);
  EXPECT_EQ(back.message, mr.message) << "the message is kept whole";
  mr.usage = {1000, 20};
  EXPECT_FALSE(json(mr)["usage"].contains("cache_read_tokens"));
  EXPECT_FALSE(json(mr)["usage"].contains("cache_write_tokens"));

  ToolFinished tf;
  tf.call_id = "c";
  tf.not_run = true;
  EXPECT_TRUE(round_trip(tf).not_run);
  tf.not_run = false;
  EXPECT_FALSE(json(tf).contains("not_run"));

  BudgetWarned bw{"cost_usd", 1.0, 2.0, true};
  EXPECT_TRUE(round_trip(bw).predicted);
  bw.predicted = false;
  EXPECT_FALSE(json(bw).contains("predicted"));
  EXPECT_FALSE(round_trip(bw).predicted);
}

TEST(Events, UnknownMembersAreIgnored) {
  NewEvent n = make_event(RunFinished{"finish", "done"});
  n.payload["written_by_a_newer_marathon"] = {1, 2, 3};
  RunFinished p = payload_of<RunFinished>(event_of(n));
  EXPECT_EQ(p.reason, "finish");
  EXPECT_EQ(p.summary, "done");
}

TEST(Events, AMissingRequiredFieldNamesTheSeqTypeAndField) {
  NewEvent n = make_event(ToolFinished{"c1", "read_file"});
  n.payload.erase("call_id");
  try {
    payload_of<ToolFinished>(event_of(n, 42));
    FAIL() << "accepted a tool.finished without call_id";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "event seq 42 (tool.finished): field 'call_id' is missing");
  }
}

TEST(Events, AFieldOfTheWrongTypeNamesItsPath) {
  NewEvent n = make_event(RunCreated{"r"});
  n.payload["goal"] = {{"direction", "sideways"}};
  try {
    payload_of<RunCreated>(event_of(n, 1));
    FAIL() << "accepted direction 'sideways'";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("event seq 1 (run.created): field 'goal.direction' is invalid"));
    EXPECT_THAT(e.what(), HasSubstr("sideways"));
  }
  NewEvent t = make_event(ModelResponse{});
  t.payload["usage"] = {{"prompt_tokens", "many"}};
  EXPECT_THROW(
      {
        try {
          payload_of<ModelResponse>(event_of(t, 3));
        } catch (const std::invalid_argument& e) {
          EXPECT_THAT(e.what(), HasSubstr("field 'usage.prompt_tokens' is not a number"));
          throw;
        }
      },
      std::invalid_argument);
}

TEST(Events, OldPayloadShapesStillRead) {
  // A run.created before goal, budget and config existed; a compaction.elided without outcome; a
  // tool.finished without elapsed_s.
  Event created = event_of(NewEvent{RunCreated::kType, {{"run_id", "old"}}}, 1);
  RunCreated rc = payload_of<RunCreated>(created);
  EXPECT_FALSE(rc.goal.has_value());
  EXPECT_TRUE(rc.config.is_object());
  CompactionElided el = payload_of<CompactionElided>(
      event_of(NewEvent{CompactionElided::kType, {{"elided_through", 9}}}));
  EXPECT_EQ(el.outcome, CompactionOutcome::kCompacted);
  EXPECT_EQ(el.scope.elided_through, 9);
  ToolFinished tf =
      payload_of<ToolFinished>(event_of(NewEvent{ToolFinished::kType, {{"call_id", "x"}}}));
  EXPECT_EQ(tf.elapsed_s, 0);
  EXPECT_FALSE(tf.gpu_s.has_value());
}

TEST(Events, AnUnknownErrorKindReadsAsUnknownAndIsWrittenBackAsLogged) {
  NewEvent n{ModelResponse::kType, {{"error", {{"kind", "usage_rejected"}, {"message", "m"}}}}};
  ModelResponse p = payload_of<ModelResponse>(event_of(n));
  ASSERT_TRUE(p.error);
  EXPECT_EQ(p.error->kind, LlmErrorKind::kUnknown);
  EXPECT_EQ(json(*p.error)["kind"], "usage_rejected");
}

TEST(Events, EnumerationsReadBackWhatTheyWriteAndRefuseOtherText) {
  for (Direction d : {Direction::kMax, Direction::kMin}) {
    EXPECT_EQ(direction_from_string(to_string(d)), d);
  }
  for (GoalStatus s :
       {GoalStatus::kActive, GoalStatus::kPaused, GoalStatus::kCleared, GoalStatus::kDone}) {
    EXPECT_EQ(goal_status_from_string(to_string(s)), s);
  }
  for (EvalStatus s : {EvalStatus::kOk, EvalStatus::kInvalidOutput, EvalStatus::kNonzeroExit,
                       EvalStatus::kTimeout, EvalStatus::kCrash}) {
    EXPECT_EQ(eval_status_from_string(to_string(s)), s);
  }
  for (int k = 0; k < static_cast<int>(LlmErrorKind::kUnknown); ++k) {
    auto kind = static_cast<LlmErrorKind>(k);
    EXPECT_EQ(llm_error_kind_from_string(to_string(kind)), kind) << to_string(kind);
  }
  try {
    goal_status_from_string("asleep");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "goal status 'asleep' is not one of active/paused/cleared/done");
  }
  EXPECT_THROW(direction_from_string("MAX"), std::invalid_argument);
  EXPECT_THROW(goal_verb_from_string(""), std::invalid_argument);
}

TEST(Events, TargetMetAndImprovementFollowTheDirection) {
  EXPECT_TRUE(target_met(Direction::kMax, 4.0, 4.0));
  EXPECT_FALSE(target_met(Direction::kMax, 3.9, 4.0));
  EXPECT_TRUE(target_met(Direction::kMin, 1.0, 1.5));
  EXPECT_FALSE(target_met(Direction::kMin, 2.0, 1.5));
  EXPECT_FALSE(target_met(Direction::kMax, std::nullopt, 1.0)) << "no best: not met";
  EXPECT_FALSE(target_met(Direction::kMax, 9.0, std::nullopt)) << "no target: never met";
  EXPECT_TRUE(improves(Direction::kMin, 1.0, 2.0));
  EXPECT_FALSE(improves(Direction::kMin, 2.0, 2.0)) << "a tie is not an improvement";
  EXPECT_TRUE(improves(Direction::kMax, 0.1, std::nullopt));
  EXPECT_LT(better_first_key(Direction::kMax, 5), better_first_key(Direction::kMax, 3));
  EXPECT_LT(better_first_key(Direction::kMin, 3), better_first_key(Direction::kMin, 5));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Events, DocsListEveryTypeWithItsVersion) {
  std::string doc = read_text(std::string(MARATHON_SOURCE_DIR) + "/docs/event-log.md");
  ASSERT_FALSE(doc.empty());
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const TypeInfo& t : all_types()) {
    std::string row_start = "| `" + std::string(t.name) + "` | " + std::to_string(t.version) + " |";
    size_t at = doc.find(row_start);
    ASSERT_NE(at, std::string::npos) << "docs/event-log.md has no row " << row_start;
    const std::string row = doc.substr(at, doc.find('\n', at) - at);
    for (const std::string& f : t.fields) {
      std::string name = f.substr(0, f.find_first_of("?{[ ("));
      bool named = false;
      for (size_t i = row.find(name); i != std::string::npos && !named; i = row.find(name, i + 1)) {
        const size_t end = i + name.size();
        named = (i == 0 || !is_word(row[i - 1])) && (end == row.size() || !is_word(row[end]));
      }
      EXPECT_TRUE(named) << "the docs/event-log.md row of " << t.name << " does not name " << name;
    }
  }
}

// A GPU-style result (the harness's format before the schema fixed the baseline's place) keeps
// its baseline: fold reads metrics.baseline_score when the top-level one is absent.
TEST(Events, ALegacyBaselineInsideMetricsIsRecorded) {
  std::vector<Event> log;
  log.push_back(event_of(make_event(RunCreated{"r"}), 1));
  EvalFinished ev;
  ev.candidate = "c";
  ev.result = {{"schema_version", 1},
               {"correct", true},
               {"score", 1.7},
               {"metrics", {{"speedup_geomean", 1.7}, {"baseline_score", 1.0}}}};
  log.push_back(event_of(make_event(ev), 2));
  State s = fold(log);
  ASSERT_TRUE(s.baseline_score.has_value());
  EXPECT_EQ(*s.baseline_score, 1.0);
}

}  // namespace
}  // namespace marathon
