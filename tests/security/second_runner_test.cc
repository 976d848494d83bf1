// One writer per run directory: while a runner drives a run, a second `resume`, `run`, `replay`
// or `fork` aimed at the same directory is refused with the holder's pid and host, appends
// nothing and pays for nothing; readers keep working; and the run ends exactly as a lone run
// does. A runner killed with SIGKILL leaves a lock that the next resume takes over.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "core/run_lock.h"
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

std::string host() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::vector<std::string> with_binary(const std::vector<std::string>& args) {
  std::vector<std::string> argv{MARATHON_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The tiny run, uninterrupted: its comparable final state, and its evaluator executions in
// *executions.
json lone_run(const TempDir& dir, size_t* executions) {
  ScriptedLlmServer server = tiny_server();
  fs::path ref = dir / "ref";
  std::string marker = (dir / "ref.marker").string();
  EXPECT_EQ(run_binary(tiny_run_args(ref, server.base_url()), {{"MARATHON_EVAL_MARKER", marker}},
                       dir / "ref.log"),
            0)
      << read_text(dir / "ref.log");
  *executions = read_lines(marker).size();
  return comparable_state(load_state(ref));
}

TEST(SecondRunner, RefusedWhileARunnerHoldsTheRunAndTheRunEndsAsALoneRun) {
  TempDir dir("second-runner");
  size_t lone_executions = 0;
  json want = lone_run(dir, &lone_executions);

  HeldTurn held(3);  // the first runner waits on the model with events logged and tools run
  GatedServer server(held);
  fs::path run = dir / "run";
  std::map<std::string, std::string> env{{"MARATHON_EVAL_MARKER", (dir / "marker").string()}};
  Child first(with_binary(tiny_run_args(run, server.base_url())), env, dir / "first.log");
  ASSERT_TRUE(held.wait_reached(120)) << read_text(dir / "first.log");
  size_t events_before = load_events(run).size();
  size_t requests_before = server.server().request_count();

  const std::vector<std::vector<std::string>> second = {
      {"resume", run.string(), "--quiet"},
      tiny_run_args(run, server.base_url()),
      {"replay", (dir / "ref").string(), "--run-dir", run.string(), "--quiet"},
      {"fork", (dir / "ref").string(), "--at", "3", "--run-dir", run.string()},
  };
  for (const auto& args : second) {
    fs::path log = dir / ("second-" + args[0] + ".log");
    int rc = run_binary(args, env, log, 60);
    std::string out = read_text(log);
    EXPECT_NE(rc, -1) << args[0] << " did not return while the run was held:\n" << out;
    EXPECT_NE(rc, 0) << args[0] << " on a live run was not refused:\n" << out;
    EXPECT_THAT(out, HasSubstr("in use by another marathon process")) << args[0];
    EXPECT_THAT(out, HasSubstr("pid " + std::to_string(first.pid()) + " on host " + host()))
        << args[0];
  }
  EXPECT_EQ(load_events(run).size(), events_before) << "a refused runner appended to the log";
  EXPECT_EQ(server.server().request_count(), requests_before)
      << "a refused runner called the model";

  // Readers and the goal verbs' path (SQLite, no lock) keep working meanwhile.
  EXPECT_EQ(run_binary({"status", run.string()}, {}, dir / "status.log", 60), 0)
      << read_text(dir / "status.log");
  EXPECT_EQ(run_binary({"log", run.string()}, {}, dir / "log.log", 60), 0)
      << read_text(dir / "log.log");

  held.release();
  std::optional<int> rc = first.wait_for(120);
  ASSERT_TRUE(rc) << "the first runner did not finish";
  EXPECT_EQ(*rc, 0) << read_text(dir / "first.log");
  EXPECT_EQ(comparable_state(load_state(run)), want);
  EXPECT_EQ(read_lines(dir / "marker").size(), lone_executions)
      << "an evaluation was paid more than once";
}

TEST(SecondRunner, LockOfAKilledRunnerIsTakenOverByResume) {
  TempDir dir("stale-lock");
  size_t lone_executions = 0;
  json want = lone_run(dir, &lone_executions);

  HeldTurn held(3);
  GatedServer server(held);
  fs::path run = dir / "run";
  Child first(with_binary(tiny_run_args(run, server.base_url())), {}, dir / "first.log");
  ASSERT_TRUE(held.wait_reached(120)) << read_text(dir / "first.log");
  first.kill_group();
  held.release();
  auto stale = parse_lock_holder(read_text(run / "lock"));
  ASSERT_TRUE(stale) << "no lock file names the killed runner";
  EXPECT_EQ(stale->pid, first.pid());

  Child second(with_binary({"resume", run.string(), "--quiet"}), {}, dir / "second.log");
  std::optional<int> rc = second.wait_for(120);
  ASSERT_TRUE(rc);
  EXPECT_EQ(*rc, 0) << read_text(dir / "second.log");
  EXPECT_EQ(comparable_state(load_state(run)), want);
  auto now = parse_lock_holder(read_text(run / "lock"));
  ASSERT_TRUE(now);
  EXPECT_EQ(now->pid, second.pid());
}

TEST(SecondRunner, GoalVerbsStillWorkWhileARunnerHoldsTheRun) {
  TempDir dir("goal-while-held");
  HeldTurn held(3);
  GatedServer server(held);
  fs::path run = dir / "run";
  Child first(with_binary(tiny_run_args(run, server.base_url())), {}, dir / "first.log");
  ASSERT_TRUE(held.wait_reached(120)) << read_text(dir / "first.log");
  EXPECT_EQ(run_binary({"goal", "pause", run.string(), "checking"}, {}, dir / "goal.log", 60), 0)
      << read_text(dir / "goal.log");
  EXPECT_EQ(testing::events_of_type(load_events(run), events::GoalChanged::kType).size(), 1u);
  held.release();
  std::optional<int> rc = first.wait_for(120);
  ASSERT_TRUE(rc);
  EXPECT_EQ(*rc, 0) << read_text(dir / "first.log");
  EXPECT_EQ(load_state(run).goal.status, GoalStatus::kPaused)
      << "the runner did not read the goal verb";
}

}  // namespace
}  // namespace marathon
