// `marathon status` and `marathon log` (text, --json, --follow, export) on real logs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <thread>

#include "cli_runner.h"
#include "core/event_store.h"
#include "core/events.h"
#include "core/run_dir.h"
#include "test_dir.h"

namespace marathon {
namespace {

using testing::read_file;
using testing::run_cli;
using testing::TempDir;

NewEvent make(const std::string& type, json payload) {
  NewEvent e;
  e.type = type;
  e.payload = std::move(payload);
  return e;
}

RunDir make_run(const TempDir& d, bool finished) {
  RunDir r = create_run_dir(d.path() / "run");
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kCreate);
  s->append(make(events::RunCreated::kType,
                 {{"run_id", "run-log"},
                  {"goal", {{"objective", "faster"}, {"metric", "speedup"}, {"direction", "max"}}},
                  {"budget", {{"max_tool_calls", 10}}}}));
  s->append(make(events::ToolStarted::kType,
                 {{"call_id", "c1"}, {"name", "evaluate"}, {"arguments", json::object()}}));
  s->append(
      make(events::ToolFinished::kType, {{"call_id", "c1"}, {"name", "evaluate"}, {"ok", true}}));
  s->append(make(
      events::EvalFinished::kType,
      {{"candidate", "cand"}, {"status", "ok"}, {"result", {{"correct", true}, {"score", 1.7}}}}));
  if (finished) s->append(make(events::RunFinished::kType, {{"reason", "finish"}}));
  return r;
}

std::vector<json> lines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(json::parse(l));
  return out;
}

TEST(StatusCli, JsonHasTheContractFields) {
  TempDir d;
  RunDir r = make_run(d, true);
  auto res = run_cli(d, "status --json " + r.root.string());
  ASSERT_EQ(res.code, 0) << res.err;
  json j = json::parse(res.out);
  EXPECT_EQ(j["events"], 5);
  EXPECT_EQ(j["tool_calls"], 1);
  EXPECT_EQ(j["model_calls"], 0);
  EXPECT_EQ(j["evaluations"], 1);
  EXPECT_EQ(j["best_score"], 1.7);
  EXPECT_EQ(j["best_candidate"], "cand");
  EXPECT_EQ(j["done"], true);
  EXPECT_EQ(j["budget"]["limits"]["max_tool_calls"], 10);
}

TEST(StatusCli, HumanTextNamesRunBestAndInFlight) {
  TempDir d;
  RunDir r = make_run(d, false);
  {
    auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kOpen);
    s->append(make(events::ToolStarted::kType,
                   {{"call_id", "c2"}, {"name", "run"}, {"arguments", json::object()}}));
  }
  auto res = run_cli(d, "status " + r.root.string());
  ASSERT_EQ(res.code, 0) << res.err;
  EXPECT_NE(res.out.find("run-log"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("1.7"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("in flight  run (c2)"), std::string::npos) << res.out;
}

TEST(LogCli, JsonLinesAreTheStoredEvents) {
  TempDir d;
  RunDir r = make_run(d, true);
  auto res = run_cli(d, "log --json " + r.root.string());
  ASSERT_EQ(res.code, 0) << res.err;
  auto ls = lines(res.out);
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kReadOnly);
  auto events = s->read();
  ASSERT_EQ(ls.size(), events.size());
  for (size_t i = 0; i < ls.size(); ++i) EXPECT_EQ(ls[i], to_json(events[i]));
  res = run_cli(d, "log " + r.root.string());
  EXPECT_NE(res.out.find("eval.finished"), std::string::npos);
}

TEST(LogCli, ExportWritesJsonlAndMsp) {
  TempDir d;
  RunDir r = make_run(d, true);
  auto res = run_cli(d, "log export " + r.root.string() + " -o " + (d / "out.jsonl"));
  ASSERT_EQ(res.code, 0) << res.err;
  EXPECT_EQ(lines(read_file(d / "out.jsonl")).size(), 5u);
  res = run_cli(d, "log export " + r.root.string() + " -o " + (d / "out.msp") + " --format msp");
  ASSERT_EQ(res.code, 0) << res.err;
  auto msp = lines(read_file(d / "out.msp"));
  ASSERT_EQ(msp.size(), 5u);
  EXPECT_EQ(msp[0]["stream"]["id"], "run-log");
  EXPECT_EQ(msp[3]["payload_type"], "eval.finished");
  EXPECT_EQ(msp[3]["sequence"], 4);
  for (const char* k :
       {"schema_version", "id", "stream", "sequence", "recorded_at", "record_type", "durability",
        "causation_id", "payload_type", "payload_schema_version", "payload"}) {
    EXPECT_TRUE(msp[0].contains(k)) << k;
  }
  res = run_cli(d, "log export " + r.root.string() + " -o " + (d / "x") + " --format xml");
  EXPECT_NE(res.code, 0);
}

TEST(LogCli, BadRunDirIsAClearErrorNotACrash) {
  TempDir d;
  auto res = run_cli(d, "log " + (d / "missing"));
  EXPECT_TRUE(res.exited);
  EXPECT_EQ(res.code, 2);  // a usage error: docs/operations.md, "Exit codes"
  EXPECT_NE(res.err.find("does not exist"), std::string::npos) << res.err;
}

// --follow prints events appended by another writer while it runs and stops at run.finished.
TEST(LogCli, FollowSeesLiveAppendsAndStopsAtRunFinished) {
  TempDir d;
  RunDir r = make_run(d, false);
  std::string out = d / "follow.out";
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string cmd = std::string(CORE_CLI_BINARY) + " log --json --follow --poll 0.05 " +
                      r.root.string() + " > " + out;
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    ::_exit(127);
  }
  {
    auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kOpen);
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      s->append(
          make(events::LedgerNoted::kType, {{"kind", "finding"}, {"text", std::to_string(i)}}));
    }
    s->append(make(events::RunFinished::kType, {{"reason", "finish"}}));
  }
  int status = 0;
  bool reaped = false;  // the follower must exit by itself; fail rather than hang
  for (int i = 0; i < 600 && !reaped; ++i) {
    reaped = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!reaped) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "log --follow did not stop at run.finished";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto ls = lines(read_file(out));
  ASSERT_EQ(ls.size(), 10u);
  EXPECT_EQ(ls.back()["type"], "run.finished");
  for (size_t i = 0; i < ls.size(); ++i) EXPECT_EQ(ls[i]["seq"], static_cast<int>(i) + 1);
}

TEST(LogCli, FollowStopsOnSigint) {
  TempDir d;
  RunDir r = make_run(d, false);
  std::string out = d / "follow.out";
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::execl(CORE_CLI_BINARY, CORE_CLI_BINARY, "log", "--follow", "--poll", "0.05", r.root.c_str(),
            nullptr);
    ::_exit(127);
  }
  // Wait until it has printed the existing events, then interrupt it.
  for (int i = 0; i < 200 && read_file(out).find("eval.finished") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "log --follow died of the signal instead of stopping";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(read_file(out).find("eval.finished"), std::string::npos);
}

}  // namespace
}  // namespace marathon
