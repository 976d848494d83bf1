// Fold checkpoints: State <-> JSON round trip, fold(all) == checkpoint + fold(tail) at every seq,
// and every way a checkpoint can be unusable (missing, stale, damaged, from another log) falling
// back to folding the events, never to an error or a wrong state.
#include "core/checkpoint.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "cli_runner.h"
#include "core/json_reader.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "core/state_json.h"
#include "every_event_log.h"
#include "test_dir.h"

namespace marathon {
namespace {

using testing::TempDir;

std::string dump(const State& s) { return state_to_json(s).dump(); }

void run_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// The every-event-type log, stored; returns the store (read-write).
std::unique_ptr<EventStore> stored_log(const std::string& path) {
  auto s = EventStore::open(path, EventStore::Mode::kCreate);
  for (const NewEvent& e : testing::every_event_log()) s->append(e);
  return s;
}

State full_fold(const EventStore& s, int64_t to_seq = INT64_MAX) {
  LoadOptions o;
  o.use_checkpoints = false;
  return load_state(s, to_seq, o);
}

TEST(StateJson, RoundTripsEveryFieldOfAStateThatUsesThemAll) {
  TempDir d;
  auto store = stored_log(d / "events.db");
  State s = full_fold(*store);
  // The log leaves every part of the state non-default (so a field the JSON forgot would show).
  ASSERT_TRUE(s.created && s.done && s.compaction.installed_seq != 0 && s.best_score &&
              s.baseline_score);
  ASSERT_FALSE(s.in_flight.empty() || s.tool_calls_by_name.empty() || s.eval_cache.empty() ||
               s.candidates.empty() || s.budget_warnings.empty() || s.forked_from.empty());
  ASSERT_GT(s.compaction.compactions, 0);
  ASSERT_GT(s.turn.responses(), 0);
  ASSERT_GT(s.used.gpu_s, 0);
  ASSERT_GT(s.used.cache_read_tokens, 0);
  ASSERT_GT(s.used.cache_write_tokens, 0);
  std::string text = dump(s);
  State back = state_from_json(json::parse(text));
  EXPECT_TRUE(back == s);
  EXPECT_EQ(dump(back), text);
  EXPECT_EQ(to_json(back).dump(), to_json(s).dump());
}

TEST(StateJson, MissingOrMistypedFieldIsNamed) {
  json j = state_to_json(State{});
  j.erase("tool_calls_by_name");
  EXPECT_THROW(
      {
        try {
          state_from_json(j);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("tool_calls_by_name"), std::string::npos)
              << e.what();
          throw;
        }
      },
      std::invalid_argument);
  j = state_to_json(State{});
  j["used"][0] = "many";
  EXPECT_THROW(state_from_json(j), std::invalid_argument);
}

TEST(StateJson, NonFiniteNumbersAreRefusedNotWrittenAsNull) {
  State s;
  s.used.cost_usd = std::numeric_limits<double>::infinity();
  EXPECT_THROW(state_to_json(s), std::invalid_argument);
  State t;
  t.task["x"] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(state_to_json(t), std::invalid_argument);
}

// In memory: the checkpoint of the first k events, read back, plus the rest folded, is fold(all).
TEST(Checkpoint, FoldOfAllEqualsCheckpointPlusTailAtEverySeq) {
  TempDir d;
  auto store = stored_log(d / "events.db");
  std::vector<Event> events = store->read();
  std::string want = dump(fold(events));
  for (size_t k = 0; k <= events.size(); ++k) {
    State head = fold(std::vector<Event>(events.begin(), events.begin() + k));
    State s = state_from_json(parse_json(dump(head)));
    for (size_t i = k; i < events.size(); ++i) apply(s, events[i]);
    EXPECT_EQ(dump(s), want) << "checkpoint after " << k << " events";
    EXPECT_TRUE(s == fold(events)) << "checkpoint after " << k << " events";
  }
}

// Through the store: load_state from a checkpoint at each seq equals the full fold, byte for byte.
TEST(Checkpoint, LoadStateFromACheckpointAtEverySeqEqualsTheFullFold) {
  TempDir d;
  auto store = stored_log(d / "events.db");
  int64_t last = store->last_seq();
  State full = full_fold(*store);
  for (int64_t k = 1; k <= last; ++k) {
    write_checkpoint(*store, full_fold(*store, k));
    LoadStats st;
    State s = load_state(*store, INT64_MAX, {}, &st);
    EXPECT_EQ(st.checkpoint_seq, k);
    EXPECT_EQ(st.events_folded, last - k);
    EXPECT_TRUE(st.rejected_checkpoints.empty());
    EXPECT_EQ(dump(s), dump(full)) << "checkpoint at seq " << k;
    EXPECT_EQ(to_json(s).dump(), to_json(full).dump()) << "checkpoint at seq " << k;
    // A load up to an earlier seq passes over newer checkpoints.
    EXPECT_EQ(dump(load_state(*store, k - 1)), dump(full_fold(*store, k - 1)));
  }
  // Only the newest kCheckpointsKept are kept.
  int rows = 0;
  store->for_each_checkpoint(kFoldVersion, INT64_MAX, [&](auto&) { return ++rows, true; });
  EXPECT_EQ(rows, kCheckpointsKept);
}

TEST(Checkpoint, WritersCheckpointEveryNEvents) {
  TempDir d;
  auto store = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  std::vector<int64_t> written;
  State s;
  for (int i = 0; i < 35; ++i) {
    for (const Event& e : store->append_batch(
             {testing::make_event(i == 0 ? events::RunCreated::kType : events::LedgerNoted::kType,
                                  {{"run_id", "r"}, {"kind", "finding"}, {"text", "x"}})})) {
      apply(s, e);
    }
    if (maybe_write_checkpoint(*store, s, 10)) written.push_back(s.last_seq);
  }
  EXPECT_EQ(written, (std::vector<int64_t>{10, 20, 30}));
  // Batches that jump over a multiple still checkpoint once.
  State t = s;
  for (const Event& e : store->append_batch(
           std::vector<NewEvent>(12, testing::make_event(events::LedgerNoted::kType,
                                                         {{"kind", "finding"}, {"text", "y"}})))) {
    apply(t, e);
  }
  EXPECT_TRUE(maybe_write_checkpoint(*store, t, 10));
  EXPECT_FALSE(maybe_write_checkpoint(*store, t, 10));
  EXPECT_EQ(store->last_checkpoint_seq(kFoldVersion), 47);
  EXPECT_EQ(dump(load_state(*store)), dump(full_fold(*store)));
}

TEST(Checkpoint, AStateAheadOfTheLogIsNotStored) {
  TempDir d;
  auto store = stored_log(d / "events.db");
  State s = full_fold(*store);
  s.last_seq += 5;
  EXPECT_FALSE(maybe_write_checkpoint(*store, s, 1));
  EXPECT_THROW(write_checkpoint(*store, s), StoreError);
  EXPECT_EQ(store->last_checkpoint_seq(kFoldVersion), 0);
}

// Checkpoints at seqs 20 and 30 of the every-event log; returns the full fold.
State two_checkpoints(EventStore& store) {
  write_checkpoint(store, full_fold(store, 20));
  write_checkpoint(store, full_fold(store, 30));
  return full_fold(store);
}

TEST(CheckpointFallback, DamagedNewestFallsBackToTheOneBefore) {
  TempDir d;
  std::string path = d / "events.db";
  State full;
  {
    auto store = stored_log(path);
    full = two_checkpoints(*store);
  }
  // Still valid JSON, and still the state's shape: only the checksum can tell.
  run_sql(path,
          "UPDATE checkpoints SET state = replace(state, '\"turns\":2', '\"turns\":7') "
          "WHERE seq = 30");
  auto store = EventStore::open(path, EventStore::Mode::kReadOnly);
  LoadStats st;
  State s = load_state(*store, INT64_MAX, {}, &st);
  EXPECT_EQ(st.checkpoint_seq, 20);
  ASSERT_EQ(st.rejected_checkpoints.size(), 1u);
  EXPECT_NE(st.rejected_checkpoints[0].find("seq 30"), std::string::npos);
  EXPECT_NE(st.rejected_checkpoints[0].find("checksum mismatch"), std::string::npos);
  EXPECT_EQ(dump(s), dump(full));
}

TEST(CheckpointFallback, AllDamagedFallsBackToTheFullFold) {
  TempDir d;
  std::string path = d / "events.db";
  State full;
  {
    auto store = stored_log(path);
    full = two_checkpoints(*store);
  }
  run_sql(path, "UPDATE checkpoints SET checksum = checksum + 1");
  auto store = EventStore::open(path, EventStore::Mode::kOpen);
  LoadStats st;
  State s = load_state(*store, INT64_MAX, {}, &st);
  EXPECT_EQ(st.checkpoint_seq, 0);
  EXPECT_EQ(st.rejected_checkpoints.size(), 2u);
  EXPECT_EQ(st.events_folded, store->last_seq());
  EXPECT_EQ(dump(s), dump(full));
}

TEST(CheckpointFallback, UnreadableOrMislabelledStateIsPassedOver) {
  TempDir d;
  auto store = stored_log(d / "events.db");
  State full = full_fold(*store);
  // Correct checksums (put_checkpoint computes them) over contents that are wrong.
  store->put_checkpoint(25, kFoldVersion, "{\"last_seq\": 25, \"cut off", 3);
  store->put_checkpoint(26, kFoldVersion, "{\"last_seq\": 26}", 3);
  store->put_checkpoint(27, kFoldVersion, dump(full_fold(*store, 12)), 3);
  LoadStats st;
  State s = load_state(*store, INT64_MAX, {}, &st);
  EXPECT_EQ(st.checkpoint_seq, 0);
  ASSERT_EQ(st.rejected_checkpoints.size(), 3u);
  EXPECT_NE(st.rejected_checkpoints[0].find("another seq"), std::string::npos);
  EXPECT_NE(st.rejected_checkpoints[1].find("is missing"), std::string::npos);
  EXPECT_NE(st.rejected_checkpoints[2].find("unreadable"), std::string::npos);
  EXPECT_EQ(dump(s), dump(full));
}

TEST(CheckpointFallback, OtherFoldVersionsAreIgnored) {
  TempDir d;
  auto store = stored_log(d / "events.db");
  State full = full_fold(*store);
  State old = full_fold(*store, 30);
  old.turns = 99;  // what an older fold might have made of the same events
  store->put_checkpoint(30, kFoldVersion - 1, dump(old), 2);
  store->put_checkpoint(31, kFoldVersion + 1, "{}", 2);
  LoadStats st;
  EXPECT_EQ(dump(load_state(*store, INT64_MAX, {}, &st)), dump(full));
  EXPECT_EQ(st.checkpoint_seq, 0);
  EXPECT_TRUE(st.rejected_checkpoints.empty());  // not even read
  // Writing one of this version prunes those of other versions.
  write_checkpoint(*store, full);
  int rows = 0;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((d / "events.db").c_str(), &db), SQLITE_OK);
  sqlite3_exec(
      db, "SELECT count(*) FROM checkpoints",
      [](void* n, int, char** v, char**) { return *static_cast<int*>(n) = std::atoi(v[0]), 0; },
      &rows, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(rows, 1);
}

TEST(CheckpointFallback, CheckpointOfAnotherLogIsPassedOver) {
  TempDir d;
  std::string a = d / "a.db", b = d / "b.db";
  {
    auto store = stored_log(a);
    write_checkpoint(*store, full_fold(*store, 30));
  }
  State full_b;
  {
    auto store = stored_log(b);  // the same types and payloads, other event ids
    full_b = full_fold(*store);
  }
  run_sql(b, "ATTACH '" + a + "' AS a; INSERT INTO checkpoints SELECT * FROM a.checkpoints;");
  auto store = EventStore::open(b, EventStore::Mode::kReadOnly);
  LoadStats st;
  EXPECT_EQ(dump(load_state(*store, INT64_MAX, {}, &st)), dump(full_b));
  ASSERT_EQ(st.rejected_checkpoints.size(), 1u);
  EXPECT_NE(st.rejected_checkpoints[0].find("not the one it was taken at"), std::string::npos);
}

TEST(CheckpointFallback, LogWithoutACheckpointTableOpensAndGetsOneOnFirstWrite) {
  TempDir d;
  std::string path = d / "events.db";
  { auto store = stored_log(path); }
  run_sql(path, "DROP TABLE checkpoints");  // a log written before checkpoints existed
  auto ro = EventStore::open(path, EventStore::Mode::kReadOnly);
  State full = load_state(*ro);
  EXPECT_EQ(ro->last_checkpoint_seq(kFoldVersion), 0);
  ro.reset();
  auto store = EventStore::open(path, EventStore::Mode::kOpen);
  EXPECT_TRUE(maybe_write_checkpoint(*store, full, 10));
  LoadStats st;
  EXPECT_EQ(dump(load_state(*store, INT64_MAX, {}, &st)), dump(full));
  EXPECT_EQ(st.checkpoint_seq, full.last_seq);
}

// A byte flipped in the file inside a checkpoint (its checksum catches it): `marathon status`
// still succeeds, with the state of the full fold, and says it passed the checkpoint over.
TEST(CheckpointFallback, FlippedBytesOnDiskAreCaughtAndStatusStillWorks) {
  TempDir d;
  RunDir run = create_run_dir(d.path() / "run");
  std::string path = run.events_db().string();
  std::string want;
  {
    auto store = stored_log(path);
    write_checkpoint(*store, full_fold(*store));
    want = to_json(full_fold(*store)).dump();
  }
  std::string bytes = testing::read_file(path);
  // The key appears only in checkpoints; flipping one bit keeps the text valid JSON.
  size_t n = 0;
  for (size_t at = bytes.find("evals_since_improvement"); at != std::string::npos;
       at = bytes.find("evals_since_improvement", at + 1), ++n) {
    bytes[at + 3] ^= 0x01;
  }
  ASSERT_GT(n, 0u) << "the checkpoint is not in the main file (still in the WAL?)";
  testing::write_file(path, bytes);
  testing::CliResult r = testing::run_cli(d, "status --json " + run.root.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).dump(), json::parse(want).dump());
  EXPECT_NE(r.err.find("passed over: checksum mismatch"), std::string::npos) << r.err;
  r = testing::run_cli(d, "status --verify --json " + run.root.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).dump(), json::parse(want).dump());
}

// A damaged event before the checkpoint is not read by a load from the checkpoint (the trade
// docs/event-log.md states); a full fold (`status --verify`) still reports it.
TEST(CheckpointFallback, VerifyFoldsEveryEventAndFindsDamageBeforeTheCheckpoint) {
  TempDir d;
  RunDir run = create_run_dir(d.path() / "run");
  std::string path = run.events_db().string();
  {
    auto store = stored_log(path);
    write_checkpoint(*store, full_fold(*store));
  }
  std::string bytes = testing::read_file(path);
  size_t at = bytes.find("tokens_estimate");  // in a model.request payload, not in the state
  ASSERT_NE(at, std::string::npos);
  bytes[at] ^= 0x01;
  testing::write_file(path, bytes);
  EXPECT_EQ(testing::run_cli(d, "status " + run.root.string()).code, 0);
  testing::CliResult r = testing::run_cli(d, "status --verify " + run.root.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("checksum mismatch"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace marathon
