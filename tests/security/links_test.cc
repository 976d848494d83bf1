// Links and special files planted by a hostile model. The model's `run` tool may make links and
// FIFOs in its workspace; the runtime, which has more privileges than the sandbox, then touches
// the workspace itself: `revert`, resume's rebuild, fork, `read_file`, `evaluate`. Each test drives
// the real binary with a scripted model that plants a file link, a folder link, a dangling link
// and a link climbing out with "../..", all aimed at a decoy folder beside the run that stands for
// the host's files, and asserts that nothing in the decoy is written, created or deleted.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "loop/loop_test_support.h"
#include "loop/tiny_script.h"
#include "scripted_llm_server.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::events_of_type;
using testing::load_events;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::ScriptedResponse;
using testing::TempDir;

// The decoy: host files and folders a link can point at.
struct Decoy {
  explicit Decoy(const fs::path& p) : dir(p) {
    fs::create_directories(dir / "hostdir");
    fs::create_directories(dir / "victimdir");
    put("host.txt", "host file\n");
    put("rel.txt", "reached with ../..\n");
    put("hostdir/keep.txt", "host folder file\n");
    put("victimdir/victim.txt", "must survive\n");
  }
  void put(const std::string& rel, const std::string& bytes) const {
    std::ofstream(dir / rel, std::ios::binary) << bytes;
  }
  // Every entry below the decoy with its content ("dir" for folders), links not followed.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> out;
    for (auto& e : fs::recursive_directory_iterator(dir)) {
      std::string rel = fs::relative(e.path(), dir).string();
      out[rel] = e.is_symlink() ? "link" : e.is_directory() ? "dir" : read_text(e.path());
    }
    return out;
  }
  fs::path dir;
};

std::string shell_quote(const fs::path& p) { return "'" + p.string() + "'"; }

ScriptedResponse calls(std::vector<json> list) {
  json arr = json::array();
  for (json& c : list) arr.push_back(std::move(c));
  return testing::openai_tool_calls(arr);
}

ScriptedResponse finish() { return calls({tc("finish", {{"summary", "done"}})}); }

std::vector<json> tool_finished_of(const fs::path& run, const std::string& name) {
  std::vector<json> out;
  for (const Event& e : events_of_type(load_events(run), events::ToolFinished::kType)) {
    if (e.payload.value("name", "") == name) out.push_back(e.payload);
  }
  return out;
}

// A file link, a folder link, a dangling link and a "../.." link replace files the log knows;
// `revert` must put the logged files back in the workspace and touch nothing they point at.
TEST(PlantedLinks, RevertWritesAndDeletesNothingOutsideTheWorkspace) {
  TempDir dir("sec-revert");
  Decoy decoy(dir / "decoy");
  auto before = decoy.snapshot();
  fs::path run = dir / "run";  // workspace: run/workspace, so ../../decoy is the decoy
  std::string plant = "rm -rf solution.txt sub d.txt r.txt del && ln -s " +
                      shell_quote(decoy.dir / "host.txt") + " solution.txt && ln -s " +
                      shell_quote(decoy.dir / "hostdir") + " sub && ln -s " +
                      shell_quote(decoy.dir / "created.txt") +
                      " d.txt && ln -s ../../decoy/rel.txt r.txt && ln -s " +
                      shell_quote(decoy.dir / "victimdir") + " del";
  auto write = [](const std::string& p, const std::string& c) {
    return tc("write_file", {{"path", p}, {"content", c}});
  };
  ScriptedLlmServer server([&](size_t, const json& request) {
    switch (ScriptedLlmServer::assistant_turns(request)) {
      case 0:
        return calls({write("solution.txt", "value = 5\n"), write("sub/extra.txt", "x\n"),
                      write("d.txt", "d1\n"), write("r.txt", "r1\n")});
      case 1:
        return calls({tc("evaluate", {{"strategy", "five"}})});
      case 2:  // the logged files change, so revert has them all to restore
        return calls({write("solution.txt", "value = 3\n"), write("sub/extra.txt", "y\n"),
                      write("d.txt", "d2\n"), write("r.txt", "r2\n"),
                      write("del/victim.txt", "logged, not in the candidate\n")});
      case 3:
        return calls({tc("run", {{"command", plant}})});
      case 4:
        return calls({tc("revert", {{"candidate", tiny_candidate("value = 5\n")}})});
      default:
        return finish();
    }
  });
  ASSERT_EQ(run_binary(tiny_run_args(run, server.base_url()), {}, dir / "log", 300), 0)
      << read_text(dir / "log");

  std::vector<json> planted = tool_finished_of(run, "run");
  ASSERT_EQ(planted.size(), 1u);
  ASSERT_TRUE(planted[0].value("ok", false)) << planted[0].dump();
  EXPECT_EQ(decoy.snapshot(), before) << "revert wrote, created or deleted a host file";
  std::vector<json> reverted = tool_finished_of(run, "revert");
  ASSERT_EQ(reverted.size(), 1u);
  EXPECT_TRUE(reverted[0].value("ok", false)) << reverted[0].dump();
  // The candidate's files are back as regular files in real folders.
  fs::path ws = run / "workspace";
  EXPECT_FALSE(fs::is_symlink(ws / "solution.txt"));
  EXPECT_EQ(read_text(ws / "solution.txt"), "value = 5\n");
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(ws / "sub")));
  EXPECT_EQ(read_text(ws / "sub/extra.txt"), "x\n");
  EXPECT_EQ(read_text(ws / "d.txt"), "d1\n");
  EXPECT_EQ(read_text(ws / "r.txt"), "r1\n");
}

// The links are planted, then the runner is killed; resume rebuilds the workspace from the log
// and must not follow them.
TEST(PlantedLinks, ResumeAfterAKillRebuildsTheWorkspaceWithoutFollowingThem) {
  TempDir dir("sec-resume");
  Decoy decoy(dir / "decoy");
  auto before = decoy.snapshot();
  fs::path run = dir / "run";
  std::string plant = "rm -rf sub solution.txt && ln -s " + shell_quote(decoy.dir / "hostdir") +
                      " sub && ln -s " + shell_quote(decoy.dir / "host.txt") +
                      " solution.txt && ln -s ../../decoy/rel.txt rel_link && ln -s " +
                      shell_quote(decoy.dir / "dangling.txt") + " dangling && ln -s " +
                      shell_quote(decoy.dir / "victimdir") + " victims";
  std::atomic<bool> killed{false};
  ScriptedLlmServer server([&](size_t, const json& request) {
    switch (ScriptedLlmServer::assistant_turns(request)) {
      case 0:
        return calls({tc("write_file", {{"path", "sub/extra.txt"}, {"content", "x\n"}}),
                      tc("write_file", {{"path", "solution.txt"}, {"content", "value = 2\n"}})});
      case 1:
        return calls({tc("run", {{"command", plant}})});
      case 2:
        if (!killed) {  // hold the runner here until the test kills it
          ScriptedResponse slow = finish();
          slow.delay_s = 8;
          return slow;
        }
        return finish();
      default:
        return finish();
    }
  });
  {
    std::vector<std::string> argv{MARATHON_BINARY};
    for (const std::string& a : tiny_run_args(run, server.base_url())) argv.push_back(a);
    Child child(argv, {}, dir / "log");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (server.request_count() < 3 && std::chrono::steady_clock::now() < deadline) {
      ASSERT_FALSE(child.wait_for(0.05).has_value()) << read_text(dir / "log");
    }
    ASSERT_GE(server.request_count(), 3u) << read_text(dir / "log");
    child.kill_group();
    killed = true;
  }
  ASSERT_TRUE(fs::is_symlink(run / "workspace/sub")) << "the links were not planted";
  ASSERT_EQ(run_binary({"resume", run.string(), "--quiet"}, {}, dir / "resume.log", 300), 0)
      << read_text(dir / "resume.log");

  EXPECT_EQ(decoy.snapshot(), before) << "resume wrote, created or deleted a host file";
  fs::path ws = run / "workspace";
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(ws / "sub")));
  EXPECT_EQ(read_text(ws / "sub/extra.txt"), "x\n");
  EXPECT_FALSE(fs::is_symlink(ws / "solution.txt"));
  EXPECT_EQ(read_text(ws / "solution.txt"), "value = 2\n");
  for (const char* link : {"rel_link", "dangling", "victims"}) {
    EXPECT_FALSE(fs::exists(fs::symlink_status(ws / link))) << link << " survived the rebuild";
  }

  // A fork of the hostile run rebuilds its own workspace and nothing else.
  fs::path forked = dir / "fork";
  int64_t last = load_events(run).back().seq;
  ASSERT_EQ(
      run_binary({"fork", run.string(), "--at", std::to_string(last), "--run-dir", forked.string()},
                 {}, dir / "fork.log", 120),
      0)
      << read_text(dir / "fork.log");
  EXPECT_EQ(decoy.snapshot(), before) << "fork touched a host file";
  EXPECT_EQ(read_text(forked / "workspace/sub/extra.txt"), "x\n");
  EXPECT_EQ(read_text(forked / "workspace/solution.txt"), "value = 2\n");
}

// A FIFO made by `run`: read_file must refuse it at once. On a blocking open the runner would
// wait forever (and a resume would re-run the read and wait again).
TEST(PlantedSpecialFiles, ReadFileOfAFifoIsRefusedAtOnce) {
  TempDir dir("sec-fifo");
  fs::path run = dir / "run";
  ScriptedLlmServer server([&](size_t, const json& request) {
    switch (ScriptedLlmServer::assistant_turns(request)) {
      case 0:
        return calls({tc("run", {{"command", "mkfifo pipe"}})});
      case 1:
        return calls({tc("read_file", {{"path", "pipe"}}),
                      tc("grep", {{"pattern", "value"}, {"path", "."}})});
      default:
        return finish();
    }
  });
  // A coarse bound: the whole run takes seconds; a blocked read never ends.
  int rc = run_binary(tiny_run_args(run, server.base_url()), {}, dir / "log", 120);
  ASSERT_EQ(rc, 0) << "the run did not finish (a blocked read?):\n" << read_text(dir / "log");
  std::vector<json> reads = tool_finished_of(run, "read_file");
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_FALSE(reads[0].value("ok", true));
  EXPECT_NE(reads[0].value("output", "").find("FIFO"), std::string::npos) << reads[0].dump();
  std::vector<json> greps = tool_finished_of(run, "grep");
  ASSERT_EQ(greps.size(), 1u);
  EXPECT_NE(greps[0].value("output", "").find("solution.txt:1: value = 1"), std::string::npos)
      << greps[0].dump();
}

// The editable file becomes a link to a correct solution and is evaluated; then the link's target
// turns wrong. Skipping the link in the candidate hash made both the same (empty) candidate, so
// the wrong one was served from the result cache as correct. A candidate that is a link, or that
// has no editable file at all, is refused and nothing is cached for it.
TEST(PlantedLinks, ALinkedEditableFileIsNeverEvaluatedNorServedFromTheCache) {
  TempDir dir("sec-cache");
  fs::path run = dir / "run";
  ScriptedLlmServer server([&](size_t, const json& request) {
    switch (ScriptedLlmServer::assistant_turns(request)) {
      case 0:
        return calls({tc("run", {{"command",
                                  "printf 'value = 9\\n' > good.txt && rm -f solution.txt && "
                                  "ln -s good.txt solution.txt"}})});
      case 1:
        return calls({tc("evaluate", {{"strategy", "linked, correct"}})});
      case 2:
        return calls({tc("run", {{"command", "printf 'value = oops\\n' > good.txt"}})});
      case 3:
        return calls({tc("evaluate", {{"strategy", "linked, wrong"}})});
      case 4:
        return calls({tc("run", {{"command", "rm -f solution.txt"}})});
      case 5:
        return calls({tc("evaluate", {{"strategy", "no editable file"}})});
      default:
        return finish();
    }
  });
  ASSERT_EQ(run_binary(tiny_run_args(run, server.base_url()), {}, dir / "log", 300), 0)
      << read_text(dir / "log");
  std::vector<Event> events = load_events(run);
  for (const Event& e : events_of_type(events, events::EvalFinished::kType)) {
    EXPECT_FALSE(e.payload.value("cached", false))
        << "an evaluation was served from the cache: " << e.payload.dump();
    EXPECT_FALSE(e.payload["result"].value("correct", false))
        << "a linked or empty candidate was judged correct: " << e.payload.dump();
  }
  std::vector<json> evals = tool_finished_of(run, "evaluate");
  ASSERT_EQ(evals.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_FALSE(evals[i].value("ok", true));
    EXPECT_NE(evals[i].value("output", "").find("'solution.txt' is a symbolic link (-> good.txt)"),
              std::string::npos)
        << evals[i].dump();
  }
  EXPECT_NE(evals[2].value("output", "").find("none of the task's editable files"),
            std::string::npos)
      << evals[2].dump();
  EXPECT_FALSE(testing::load_state(run).best_score.has_value());
}

}  // namespace
}  // namespace marathon
