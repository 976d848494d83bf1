// The SIGKILL crash test: a child process appends the deterministic workload of
// helpers/crash_workload.h and acknowledges each stored event on a pipe; the test kills it with
// SIGKILL at random moments (during open, WAL recovery, appends, blob writes, batches) and checks,
// after every kill, that the log opens, every acknowledged event is present and byte-identical,
// no partial batch is visible, the events are exactly what the writer meant to write, and fold()
// succeeds. The next child then resumes appending to the same log.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "core/event_store.h"
#include "core/load_state.h"
#include "helpers/crash_workload.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of the child's stdout
};

Child spawn_writer(const std::string& db, uint64_t seed) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    std::string s = std::to_string(seed);
    ::execl(CRASH_WRITER_BINARY, CRASH_WRITER_BINARY, db.c_str(), s.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

// Reads whole 16-byte acknowledgements from `fd` into `acks` until the deadline (or EOF when the
// deadline is in the past and the writer is dead). `buf` keeps a partial record between calls.
void read_acks(int fd, std::chrono::steady_clock::time_point deadline, bool until_eof,
               std::string& buf, std::map<int64_t, uint64_t>& acks) {
  char tmp[4096];
  for (;;) {
    int wait_ms = 0;
    if (!until_eof) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      wait_ms = static_cast<int>(left.count());
    }
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, until_eof ? -1 : wait_ms);
    if (rc <= 0) break;
    ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n <= 0) break;
    buf.append(tmp, static_cast<size_t>(n));
    while (buf.size() >= 16) {
      int64_t seq;
      uint64_t d;
      std::memcpy(&seq, buf.data(), 8);
      std::memcpy(&d, buf.data() + 8, 8);
      acks[seq] = d;
      buf.erase(0, 16);
    }
  }
}

// What the writer meant to store at each seq (index seq-1), and its blobs by hash; grown on demand.
class Expected {
 public:
  explicit Expected(uint64_t seed) : seed_(seed) {}
  const NewEvent& at(int64_t seq) {
    while (static_cast<int64_t>(events_.size()) < seq) {
      std::string blob;
      auto unit = crashtest::unit_events(seed_, static_cast<int64_t>(events_.size()) + 1, &blob);
      if (!blob.empty()) blobs_[sha256_hex(blob)] = blob;
      for (auto& e : unit) events_.push_back(std::move(e));
    }
    return events_[static_cast<size_t>(seq - 1)];
  }
  const std::string& blob(const std::string& sha) { return blobs_[sha]; }

 private:
  uint64_t seed_;
  std::vector<NewEvent> events_;
  std::map<std::string, std::string> blobs_;
};

TEST(CrashTest, SigkillAtRandomMomentsLosesNoAcknowledgedEvent) {
  fs::path dir = fs::temp_directory_path() / ("marathon-crash-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string db = (dir / "events.db").string();
  const uint64_t seed = 20261202;
  const int kKills = 200;  // kills of a writer whose log exists (earlier ones are not counted)
  std::mt19937 rng(seed);
  std::map<int64_t, uint64_t> acks;  // every acknowledged event over all children
  Expected expected(seed);
  int survived = 0, before_log = 0;
  int64_t kills_mid_pair = 0;

  for (int kill = 0; survived < kKills && kill < 2 * kKills; ++kill) {
    Child c = spawn_writer(db, seed);
    std::string buf;
    // Kill at a random moment. A child needs some tens of ms to start and open the log (with
    // WAL recovery after the previous kill), so a quarter of the kills land there; the rest land
    // in appends, blob writes, batches and checkpoints.
    int delay_us =
        (kill % 4 == 0) ? static_cast<int>(rng() % 50000) : static_cast<int>(30000 + rng() % 90000);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(delay_us);
    read_acks(c.out, deadline, false, buf, acks);
    ASSERT_EQ(::kill(c.pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(c.pid, &status, 0), c.pid);
    read_acks(c.out, deadline, true, buf, acks);
    ::close(c.out);
    ASSERT_TRUE(buf.empty()) << "a partial acknowledgement on the pipe";
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "writer exited on its own (status " << status << ") before kill " << kill
        << "; its stderr says why";

    if (!fs::exists(db)) {  // killed before the log was created
      ++before_log;
      continue;
    }
    // Alternate how the survivor is opened: read-only (status) and read-write (resume).
    auto mode = kill % 2 ? EventStore::Mode::kOpen : EventStore::Mode::kReadOnly;
    std::unique_ptr<EventStore> store;
    ASSERT_NO_THROW(store = EventStore::open(db, mode)) << "after kill " << kill;
    int64_t last = store->last_seq();
    if (!acks.empty()) {
      ASSERT_GE(last, acks.rbegin()->first) << "acknowledged events lost at kill " << kill;
    }
    ASSERT_TRUE(crashtest::may_end_at(seed, last))
        << "log ends inside an atomic batch at seq " << last << " (kill " << kill << ")";

    std::vector<Event> got = store->read();
    ASSERT_EQ(static_cast<int64_t>(got.size()), last);
    for (const Event& e : got) {
      const NewEvent& w = expected.at(e.seq);
      ASSERT_EQ(e.id, w.id) << "seq " << e.seq;
      ASSERT_EQ(e.type, w.type) << "seq " << e.seq;
      ASSERT_EQ(e.payload.dump(), w.payload.dump()) << "seq " << e.seq;
      if (auto a = acks.find(e.seq); a != acks.end()) {
        ASSERT_EQ(crashtest::digest(e), a->second) << "acknowledged seq " << e.seq << " changed";
      }
      if (e.type == events::WorkspaceWritten::kType) {
        std::string sha = e.payload["sha"];
        auto bytes = store->get_blob(sha);
        ASSERT_TRUE(bytes.has_value()) << "blob of seq " << e.seq << " missing";
        ASSERT_EQ(*bytes, expected.blob(sha));
      }
    }
    State s;
    ASSERT_NO_THROW(s = load_state(*store));
    ASSERT_EQ(s.last_seq, last);
    if (!s.in_flight.empty()) ++kills_mid_pair;
    ++survived;
  }
  auto final_store = EventStore::open(db, EventStore::Mode::kReadOnly);
  std::printf(
      "crash test: survived %d SIGKILLs (plus %d before the log existed); the log has "
      "%lld events, %zu acknowledged; %lld kills left a tool call in flight\n",
      survived, before_log, static_cast<long long>(final_store->last_seq()), acks.size(),
      static_cast<long long>(kills_mid_pair));
  EXPECT_EQ(survived, kKills);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace marathon
