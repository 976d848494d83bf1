#include "core/event_store.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/load_state.h"
#include "test_dir.h"

namespace marathon {
namespace {

using testing::TempDir;

NewEvent note(const std::string& text) {
  NewEvent e;
  e.type = events::LedgerNoted::kType;
  e.payload = {{"kind", "finding"}, {"text", text}};
  return e;
}

TEST(EventStore, AppendAssignsDenseSeqIdsAndMonotonicTimes) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  Event a = s->append(note("a"));
  Event b = s->append(note("b"));
  EXPECT_EQ(a.seq, 1);
  EXPECT_EQ(b.seq, 2);
  EXPECT_NE(a.id, b.id);
  EXPECT_FALSE(a.id.empty());
  EXPECT_LE(a.recorded_at_us, b.recorded_at_us);
  EXPECT_EQ(s->last_seq(), 2);
  auto all = s->read();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(to_json(all[1]), to_json(b));
}

TEST(EventStore, ReopenedLogHoldsEverythingAndContinuesTheSeq) {
  TempDir d;
  {
    auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
    s->append_batch({note("a"), note("b"), note("c")});
  }
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kOpen);
  EXPECT_EQ(s->append(note("d")).seq, 4);
  EXPECT_EQ(s->read(2, 3).size(), 2u);
  EXPECT_EQ(s->read(2, 3)[0].payload["text"], "b");
}

TEST(EventStore, CreateRefusesAnExistingLog) {
  TempDir d;
  EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  EXPECT_THROW(EventStore::open(d / "events.db", EventStore::Mode::kCreate), StoreError);
}

TEST(EventStore, OpenOfMissingFileNamesIt) {
  TempDir d;
  try {
    EventStore::open(d / "nope.db", EventStore::Mode::kOpen);
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.db"), std::string::npos);
  }
}

TEST(EventStore, ReappendingAnIdIsANoOpButDifferentContentIsRefused) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  NewEvent e = note("x");
  e.id = "fixed";
  Event first = s->append(e);
  Event again = s->append(e);
  EXPECT_EQ(again.seq, first.seq);
  EXPECT_EQ(s->last_seq(), 1);
  e.payload["text"] = "y";
  EXPECT_THROW(s->append(e), StoreError);
  EXPECT_EQ(s->find_by_id("fixed")->payload["text"], "x");
  EXPECT_FALSE(s->find_by_id("other").has_value());
}

TEST(EventStore, FailedBatchLeavesNothing) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  NewEvent bad;
  bad.type = "";  // refused
  EXPECT_THROW(s->append_batch({note("a"), bad}), StoreError);
  EXPECT_EQ(s->last_seq(), 0);
  NewEvent not_object;
  not_object.type = "x";
  not_object.payload = json::array();
  EXPECT_THROW(s->append(not_object), StoreError);
}

TEST(EventStore, InvalidUtf8InPayloadIsStoredReplaced) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  NewEvent e = note(std::string("bad \xff\xfe bytes"));
  Event stored = s->append(e);
  EXPECT_EQ(to_json(s->read()[0]), to_json(stored));
}

TEST(EventStore, BlobsAreContentAddressedAndDeduplicated) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  std::string bytes("kernel\0source", 13);
  std::string sha = s->put_blob(bytes);
  EXPECT_EQ(sha, sha256_hex(bytes));
  EXPECT_EQ(s->put_blob(bytes), sha);
  EXPECT_TRUE(s->has_blob(sha));
  EXPECT_EQ(*s->get_blob(sha), bytes);
  EXPECT_FALSE(s->get_blob(sha256_hex("other")).has_value());
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(EventStore, ReadOnlyRefusesWrites) {
  TempDir d;
  EventStore::open(d / "events.db", EventStore::Mode::kCreate)->append(note("a"));
  auto r = EventStore::open(d / "events.db", EventStore::Mode::kReadOnly);
  EXPECT_THROW(r->append(note("b")), StoreError);
  EXPECT_THROW(r->put_blob("b"), StoreError);
  EXPECT_EQ(r->last_seq(), 1);
}

TEST(EventStore, MetaRecordsFormatVersionAndRunId) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  NewEvent c;
  c.type = events::RunCreated::kType;
  c.payload = {{"run_id", "run-abc"}};
  s->append(c);
  EXPECT_EQ(s->meta("format"), "marathon-event-log");
  EXPECT_EQ(s->meta("schema_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(s->meta("run_id"), "run-abc");
}

TEST(EventStore, ImportKeepsEnvelopesAndRefusesGaps) {
  TempDir d;
  auto a = EventStore::open(d / "a.db", EventStore::Mode::kCreate);
  a->append_batch({note("1"), note("2")});
  auto b = EventStore::open(d / "b.db", EventStore::Mode::kCreate);
  b->import_events(a->read());
  EXPECT_EQ(to_json(b->read()[1]), to_json(a->read()[1]));
  Event gap = a->read()[0];
  gap.seq = 9;
  EXPECT_THROW(b->import_events({gap}), StoreError);
}

TEST(EventStore, ReaderInAnotherProcessSeesAPrefixWhileWriterAppends) {
  TempDir d;
  std::string path = d / "events.db";
  auto w = EventStore::open(path, EventStore::Mode::kCreate);
  w->append(note("0"));
  pid_t pid = ::fork();
  if (pid == 0) {  // reader: every read must be a dense prefix that folds
    int rc = 0;
    try {
      auto r = EventStore::open(path, EventStore::Mode::kReadOnly);
      int64_t seen = 0;
      while (seen < 200) {
        State s = load_state(*r);
        if (s.last_seq < seen) rc = 3;
        seen = s.last_seq;
      }
    } catch (...) {
      rc = 4;
    }
    ::_exit(rc);
  }
  for (int i = 1; i < 200; ++i) w->append(note(std::to_string(i)));
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace marathon

namespace marathon {
namespace {

TEST(LoadState, SkipsBulkyFieldsButKeepsArgumentsOfInFlightCalls) {
  testing::TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  NewEvent resp;
  resp.type = events::ModelResponse::kType;
  resp.payload = {{"message", {{"content", std::string(5000, 'x')}}},
                  {"usage", {{"prompt_tokens", 7}, {"completion_tokens", 3}}}};
  NewEvent started;
  started.type = events::ToolStarted::kType;
  started.payload = {{"call_id", "c"}, {"name", "write_file"}, {"arguments", {{"path", "k.cc"}}}};
  s->append_batch({resp, started});
  State st = load_state(*s);
  EXPECT_EQ(st.used.prompt_tokens, 7);
  ASSERT_EQ(st.in_flight.size(), 1u);
  EXPECT_EQ(st.in_flight.at("c").arguments["path"], "k.cc");
  EXPECT_EQ(s->read()[0].payload["message"]["content"].get<std::string>().size(), 5000u);
}

}  // namespace
}  // namespace marathon
