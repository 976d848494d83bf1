// A writer whose log files are removed or replaced under it stops acknowledging events
// (event_store_files.cc), while the ordinary traffic of other processes on the same log (a goal
// verb appending, a reader opening and closing) raises no alarm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/event_store.h"
#include "test_dir.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;

NewEvent note(int i) {
  NewEvent e;
  e.type = "note.added";
  e.payload = {{"text", "note " + std::to_string(i)}};
  return e;
}

std::string append_error(EventStore& s, int i) {
  try {
    s.append(note(i));
  } catch (const StoreError& e) {
    return e.what();
  }
  return "";
}

TEST(LogFiles, OtherProcessesWritingAndReadingRaiseNoAlarm) {
  TempDir d;
  auto runner = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  for (int i = 0; i < 3; ++i) runner->append(note(i));
  for (int round = 0; round < 3; ++round) {
    {
      auto goal_verb = EventStore::open(d / "events.db", EventStore::Mode::kOpen);
      goal_verb->append(note(100 + round));
    }
    { auto status = EventStore::open(d / "events.db", EventStore::Mode::kReadOnly); }
    EXPECT_EQ(append_error(*runner, 10 + round), "");
  }
  EXPECT_EQ(runner->last_seq(), 9);
}

TEST(LogFiles, RemovedWalStopsWritesAndKeepsTheEventsItHeld) {
  TempDir d;
  {
    auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
    for (int i = 0; i < 5; ++i) s->append(note(i));
    ASSERT_TRUE(fs::exists(d / "events.db-wal"));
    fs::remove(d / "events.db-wal");
    std::string err = append_error(*s, 5);
    EXPECT_THAT(err, HasSubstr("events.db-wal was removed"));
    EXPECT_THAT(err, HasSubstr("copied into"));
    // Sticky: nothing more is acknowledged.
    EXPECT_THAT(append_error(*s, 6), HasSubstr("events.db-wal was removed"));
    EXPECT_THROW(s->put_blob("bytes"), StoreError);
  }
  auto r = EventStore::open(d / "events.db", EventStore::Mode::kReadOnly);
  EXPECT_EQ(r->last_seq(), 5) << "events acknowledged before the WAL was removed were lost";
}

TEST(LogFiles, RemovedShmStopsWrites) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  s->append(note(0));
  ASSERT_TRUE(fs::exists(d / "events.db-shm"));
  fs::remove(d / "events.db-shm");
  EXPECT_THAT(append_error(*s, 1), HasSubstr("events.db-shm was removed"));
}

TEST(LogFiles, ReplacedLogFileStopsWrites) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  s->append(note(0));
  fs::copy_file(d / "events.db", d / "restored.db");
  fs::rename(d / "restored.db", d / "events.db");
  EXPECT_THAT(append_error(*s, 1), HasSubstr("events.db was replaced"));
}

TEST(LogFiles, RemovedLogFileStopsWrites) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  s->append(note(0));
  fs::rename(d / "events.db", d / "moved.db");
  EXPECT_THAT(append_error(*s, 1), HasSubstr("events.db was removed"));
}

TEST(LogFiles, WriteGuardRefusesTheWrite) {
  TempDir d;
  auto s = EventStore::open(d / "events.db", EventStore::Mode::kCreate);
  s->append(note(0));
  s->set_write_guard([] { throw StoreError("lock lost"); });
  EXPECT_EQ(append_error(*s, 1), "lock lost");
  s->set_write_guard(nullptr);
  EXPECT_EQ(s->last_seq(), 1);
}

}  // namespace
}  // namespace marathon
