// The one-writer lock of a run directory (core/run_lock.h): a second holder is refused with the
// first one's pid and host, a released lock is taken over, a new run's directory is never made
// inside a folder that holds something else.
#include "core/run_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "test_dir.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;

std::string host() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

TEST(LockHolderText, RoundTripsAndRejectsWhatIsNotAHolder) {
  auto h = parse_lock_holder(format_lock_holder({4242, "box-1"}));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->pid, 4242);
  EXPECT_EQ(h->host, "box-1");
  EXPECT_FALSE(parse_lock_holder(""));
  EXPECT_FALSE(parse_lock_holder("pid \nhost x\n"));
  EXPECT_FALSE(parse_lock_holder("pid 12a\n"));
  EXPECT_FALSE(parse_lock_holder("pid 0\nhost x\n"));
  EXPECT_FALSE(parse_lock_holder("pid 99999999999999999999999\n"));
}

TEST(RunLock, SecondHolderIsRefusedWithThePidAndHostOfTheFirst) {
  TempDir d;
  RunLock first = RunLock::acquire(d.path());
  try {
    RunLock second = RunLock::acquire(d.path());
    FAIL() << "a second lock on one run directory was granted";
  } catch (const RunLockedError& e) {
    ASSERT_TRUE(e.holder());
    EXPECT_EQ(e.holder()->pid, ::getpid());
    EXPECT_EQ(e.holder()->host, host());
    EXPECT_THAT(e.what(), HasSubstr("pid " + std::to_string(::getpid()) + " on host " + host()));
    EXPECT_THAT(e.what(), HasSubstr(d.path().string()));
  }
}

TEST(RunLock, ReleasedOrStaleLockIsTakenOver) {
  TempDir d;
  { RunLock first = RunLock::acquire(d.path()); }
  // A lock file left by a process that died, with someone else's pid in it.
  testing::write_file(d.path() / "lock", "pid 1\nhost elsewhere\n");
  RunLock again = RunLock::acquire(d.path());
  auto h = parse_lock_holder(testing::read_file(d.path() / "lock"));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->pid, ::getpid());
  EXPECT_EQ(h->host, host());
}

TEST(RunLock, NewRunIsNeverMadeInAFolderHoldingSomethingElse) {
  TempDir d;
  fs::create_directories(d.path() / "busy");
  testing::write_file(d.path() / "busy" / "notes.txt", "mine");
  EXPECT_THROW(RunLock::acquire_new(d.path() / "busy"), StoreError);
  EXPECT_FALSE(fs::exists(d.path() / "busy" / "lock")) << "a lock file was left in a user's folder";

  fs::path fresh = d.path() / "a" / "b";
  {
    RunLock l = RunLock::acquire_new(fresh);
    EXPECT_TRUE(fs::exists(fresh / "lock"));
    l.abandon_new();
  }
  EXPECT_FALSE(fs::exists(fresh)) << "an abandoned new run left its directory";
}

TEST(RunLock, NewRunInADirectoryAnotherProcessRunsNamesTheHolder) {
  TempDir d;
  RunLock held = RunLock::acquire_new(d.path() / "run");
  testing::write_file(d.path() / "run" / "events.db", "x");
  try {
    RunLock::acquire_new(d.path() / "run");
    FAIL() << "a new run was allowed in a held run directory";
  } catch (const RunLockedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("pid " + std::to_string(::getpid())));
  }
}

TEST(RunLock, RemovedLockFileIsNoticed) {
  TempDir d;
  RunLock l = RunLock::acquire(d.path());
  EXPECT_NO_THROW(l.verify());
  fs::remove(d.path() / "lock");
  RunLock other = RunLock::acquire(d.path());  // what a second runner could now do
  try {
    l.verify();
    FAIL() << "a removed lock file went unnoticed";
  } catch (const StoreError& e) {
    EXPECT_THAT(e.what(), HasSubstr("removed or replaced"));
  }
}

}  // namespace
}  // namespace marathon
