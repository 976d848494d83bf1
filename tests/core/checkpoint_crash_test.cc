// SIGKILL during checkpoint writes: a child appends the crash-test workload and writes a fold
// checkpoint after every append (helpers/crash_writer.cc with CHECKPOINT_EVERY = 1), and is killed
// at random moments, many of them inside a checkpoint's transaction. After every kill each stored
// checkpoint must be whole (checksum, event id, JSON) and be exactly the fold of the events up to
// its seq, at most kCheckpointsKept may exist, and load_state must equal the full fold.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/checkpoint.h"
#include "core/json_reader.h"
#include "core/load_state.h"
#include "core/state_json.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;

struct Writer {
  pid_t pid = -1;
  int out = -1;
};

Writer spawn(const std::string& db, uint64_t seed) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    std::string s = std::to_string(seed);
    ::execl(CRASH_WRITER_BINARY, CRASH_WRITER_BINARY, db.c_str(), s.c_str(), "1", nullptr);
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

// Reads the child's 16-byte records until `deadline` (or EOF); remembers whether the last one
// opened a checkpoint write (-1) that no record closed (-2) yet.
void read_records(int fd, std::chrono::steady_clock::time_point deadline, bool until_eof,
                  std::string& buf, bool& in_checkpoint) {
  char tmp[4096];
  for (;;) {
    int wait_ms = -1;
    if (!until_eof) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      wait_ms = static_cast<int>(left.count());
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) break;
    ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n <= 0) break;
    buf.append(tmp, static_cast<size_t>(n));
    while (buf.size() >= 16) {
      int64_t seq;
      std::memcpy(&seq, buf.data(), 8);
      if (seq == -1) in_checkpoint = true;
      if (seq == -2) in_checkpoint = false;
      buf.erase(0, 16);
    }
  }
}

std::string dump(const State& s) { return state_to_json(s).dump(); }

TEST(CheckpointCrash, SigkillDuringCheckpointWritesNeverLeavesAHalfCheckpoint) {
  fs::path dir = fs::temp_directory_path() / ("marathon-ckpt-crash-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string db = (dir / "events.db").string();
  const uint64_t seed = 20261203;
  const int kKills = 60;
  std::mt19937 rng(seed);
  int survived = 0, inside = 0, checkpoints_seen = 0;
  LoadOptions full;
  full.use_checkpoints = false;

  for (int kill = 0; survived < kKills && kill < 2 * kKills; ++kill) {
    Writer w = spawn(db, seed);
    std::string buf;
    bool in_checkpoint = false;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::microseconds(40000 + static_cast<int>(rng() % 80000));
    read_records(w.out, deadline, false, buf, in_checkpoint);
    ASSERT_EQ(::kill(w.pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(w.pid, &status, 0), w.pid);
    read_records(w.out, deadline, true, buf, in_checkpoint);
    ::close(w.out);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "writer exited on its own (status " << status << ") at kill " << kill;
    if (!fs::exists(db)) continue;  // killed before the log was created
    if (in_checkpoint) ++inside;

    auto mode = kill % 2 ? EventStore::Mode::kOpen : EventStore::Mode::kReadOnly;
    std::unique_ptr<EventStore> store;
    ASSERT_NO_THROW(store = EventStore::open(db, mode)) << "after kill " << kill;
    int rows = 0;
    store->for_each_checkpoint(kFoldVersion, INT64_MAX, [&](const EventStore::Checkpoint& c) {
      ++rows;
      EXPECT_TRUE(c.checksum_ok) << "a torn checkpoint at seq " << c.seq << " (kill " << kill
                                 << ")";
      EXPECT_EQ(c.event_id, c.log_event_id) << "seq " << c.seq;
      State s;
      EXPECT_NO_THROW(s = state_from_json(parse_json(c.state))) << "seq " << c.seq;
      EXPECT_EQ(dump(s), dump(load_state(*store, c.seq, full)))
          << "the checkpoint at seq " << c.seq << " is not the fold of the events up to it";
      return true;
    });
    ASSERT_LE(rows, kCheckpointsKept) << "pruning and writing were not one transaction";
    checkpoints_seen += rows;
    LoadStats st;
    State with;
    ASSERT_NO_THROW(with = load_state(*store, INT64_MAX, {}, &st)) << "after kill " << kill;
    EXPECT_TRUE(st.rejected_checkpoints.empty()) << st.rejected_checkpoints.front();
    ASSERT_EQ(dump(with), dump(load_state(*store, INT64_MAX, full))) << "after kill " << kill;
    ASSERT_EQ(with.last_seq, store->last_seq());
    ++survived;
  }
  std::printf(
      "checkpoint crash test: %d SIGKILLs, %d of them inside a checkpoint write; %d checkpoints "
      "checked\n",
      survived, inside, checkpoints_seen);
  EXPECT_EQ(survived, kKills);
  // With a checkpoint after every append about half of the kills land in one (P(none) ~ 1e-18):
  // zero would mean the test no longer exercises what it is named after.
  EXPECT_GT(inside, 0);
  EXPECT_GT(checkpoints_seen, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace marathon
