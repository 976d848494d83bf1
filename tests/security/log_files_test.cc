// The run's log files under attack or accident: removed or replaced under a live runner (the
// runner stops with an error naming the file, and what it had acknowledged survives), and a run
// directory on read-only media (status, log and log export still read it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>

#include "loop/loop_test_support.h"
#include "loop/replay.h"
#include "loop/tiny_script.h"
#include "run_gate.h"

namespace marathon {
namespace {

using testing::Child;
using testing::GatedServer;
using ::testing::HasSubstr;
using testing::HeldTurn;
using testing::load_events;
using testing::load_state;
using testing::read_lines;
using testing::read_text;
using testing::run_binary;
using testing::TempDir;

std::vector<std::string> with_binary(const std::vector<std::string>& args) {
  std::vector<std::string> argv{MARATHON_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

json lone_run(const TempDir& dir) {
  ScriptedLlmServer server = tiny_server();
  fs::path ref = dir / "ref";
  EXPECT_EQ(run_binary(tiny_run_args(ref, server.base_url()), {}, dir / "ref.log"), 0)
      << read_text(dir / "ref.log");
  return comparable_state(load_state(ref));
}

// A runner held on the model (at `held`'s turn) of the tiny run; `tamper` is done to its run
// directory then, and the runner let go. Returns its exit status; its output is in dir/first.log
// and the events it had logged when tampered with in *before.
int tamper_with_live_run(const TempDir& dir, const fs::path& run, HeldTurn& held,
                         GatedServer& server, const std::function<void()>& tamper,
                         std::vector<Event>* before) {
  Child first(with_binary(tiny_run_args(run, server.base_url())), {}, dir / "first.log");
  EXPECT_TRUE(held.wait_reached(120)) << read_text(dir / "first.log");
  *before = load_events(run);
  tamper();
  held.release();
  std::optional<int> rc = first.wait_for(120);
  EXPECT_TRUE(rc) << "the runner did not stop";
  return rc.value_or(-1);
}

TEST(LogFiles, WalRemovedUnderALiveRunnerStopsItAndLosesNoAcknowledgedEvent) {
  TempDir dir("wal-removed");
  json want = lone_run(dir);
  fs::path run = dir / "run";
  std::vector<Event> before;
  HeldTurn held(3);
  GatedServer server(held);
  int rc = tamper_with_live_run(
      dir, run, held, server, [&] { fs::remove(run / "events.db-wal"); }, &before);
  std::string out = read_text(dir / "first.log");
  EXPECT_NE(rc, 0) << "the runner went on after its WAL was removed:\n" << out;
  EXPECT_THAT(out, HasSubstr("events.db-wal was removed"));
  std::cout << "runner stopped with: " << out.substr(std::min(out.find("error"), out.size()))
            << "\n";

  std::vector<Event> after = load_events(run);
  ASSERT_GE(after.size(), before.size()) << "acknowledged events were lost";
  EXPECT_EQ(after[before.size() - 1].id, before.back().id);

  // Nothing was lost, so resuming ends where a lone run ends.
  EXPECT_EQ(run_binary({"resume", run.string(), "--quiet"}, {}, dir / "resume.log"), 0)
      << read_text(dir / "resume.log");
  EXPECT_EQ(comparable_state(load_state(run)), want);
}

TEST(LogFiles, LogReplacedUnderALiveRunnerStopsIt) {
  TempDir dir("db-replaced");
  fs::path run = dir / "run";
  std::vector<Event> before;
  HeldTurn held(3);
  GatedServer server(held);
  int rc = tamper_with_live_run(
      dir, run, held, server,
      [&] {
        fs::copy_file(run / "events.db", dir / "restored.db");
        fs::rename(dir / "restored.db", run / "events.db");
      },
      &before);
  std::string out = read_text(dir / "first.log");
  EXPECT_NE(rc, 0) << "the runner went on writing into a replaced log:\n" << out;
  EXPECT_THAT(out, HasSubstr("events.db was replaced"));
}

// bwrap, when it can make a mount namespace here (it is the sandbox's own dependency).
std::string usable_bwrap() {
  for (const char* p : {"/usr/bin/bwrap", "/bin/bwrap"}) {
    if (::access(p, X_OK) == 0 &&
        std::system((std::string(p) + " --bind / / true >/dev/null 2>&1").c_str()) == 0) {
      return p;
    }
  }
  return "";
}

// Runs the binary with `ro` mounted read-only (a real read-only file system: as root, chmod
// would not stop writes). Returns the exit status; output in `log`.
int run_on_read_only(const std::string& bwrap, const fs::path& ro,
                     const std::vector<std::string>& args, const fs::path& log) {
  std::vector<std::string> argv{bwrap, "--bind", "/", "/", "--ro-bind", ro.string(), ro.string()};
  argv.push_back(MARATHON_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  fs::remove(log);
  Child c(argv, {}, log);
  return c.wait_for(120).value_or(-1);
}

void copy_run(const fs::path& from, const fs::path& to, bool with_shm) {
  fs::create_directories(to);
  for (const char* f : {"events.db", "events.db-wal", "events.db-shm"}) {
    if (!with_shm && std::string(f) == "events.db-shm") continue;
    if (fs::exists(from / f)) fs::copy_file(from / f, to / f);
  }
}

TEST(LogFiles, ReadOnlyRunDirectoryCanBeInspected) {
  std::string bwrap = usable_bwrap();
  if (bwrap.empty()) GTEST_SKIP() << "bwrap cannot make a read-only mount here";
  TempDir dir("read-only");
  lone_run(dir);
  {
    // A run killed while it waits on the model leaves its WAL and -shm behind.
    HeldTurn held(3);
    GatedServer server(held);
    Child live(with_binary(tiny_run_args(dir / "live", server.base_url())), {}, dir / "live.log");
    ASSERT_TRUE(held.wait_reached(120)) << read_text(dir / "live.log");
    live.kill_group();
  }
  ASSERT_GT(fs::file_size(dir / "live" / "events.db-wal"), 0u);

  // A finished run (no WAL), a killed run's files (WAL and -shm), and its WAL alone.
  const std::tuple<const char*, fs::path, bool> copies[] = {{"finished", dir / "ref", true},
                                                            {"killed", dir / "live", true},
                                                            {"wal-only", dir / "live", false}};
  for (const auto& [name, source, with_shm] : copies) {
    // The number of events, read from a scratch copy where the folder is writable.
    fs::path scratch = dir / (std::string(name) + "-scratch");
    copy_run(source, scratch, with_shm);
    size_t events = load_events(scratch).size();
    ASSERT_GT(events, 0u);

    fs::path ro = dir / name;
    copy_run(source, ro, with_shm);
    auto listing = [&] {
      std::vector<std::string> v;
      for (const auto& e : fs::directory_iterator(ro)) v.push_back(e.path().filename());
      std::sort(v.begin(), v.end());
      return v;
    };
    std::vector<std::string> files = listing();
    EXPECT_NE(std::system((bwrap + " --bind / / --ro-bind " + ro.string() + " " + ro.string() +
                           " /bin/sh -c 'touch " + (ro / "probe").string() + "' 2>/dev/null")
                              .c_str()),
              0)
        << "the mount is not read-only; the test proves nothing";

    fs::path log = dir / (std::string(name) + ".log");
    EXPECT_EQ(run_on_read_only(bwrap, ro, {"status", "--json", ro.string()}, log), 0)
        << name << ":\n"
        << read_text(log);
    std::string out = read_text(log);
    json status = json::parse(out.substr(std::min(out.find('{'), out.size())), nullptr, false);
    EXPECT_EQ(status.value("events", -1), static_cast<int>(events)) << name << ":\n" << out;

    EXPECT_EQ(run_on_read_only(bwrap, ro, {"log", "--json", ro.string()}, log), 0)
        << name << ":\n"
        << read_text(log);
    EXPECT_EQ(read_lines(log).size(), events) << name;

    fs::path exported = dir / (std::string(name) + ".jsonl");
    EXPECT_EQ(
        run_on_read_only(bwrap, ro, {"log", "export", ro.string(), "-o", exported.string()}, log),
        0)
        << name << ":\n"
        << read_text(log);
    EXPECT_EQ(read_lines(exported).size(), events) << name;
    EXPECT_EQ(listing(), files) << name << ": the read-only folder changed";
  }
}

}  // namespace
}  // namespace marathon
