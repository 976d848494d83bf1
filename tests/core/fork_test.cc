// Workspace snapshots from blobs, and fork: prefix log, blobs, new run id, rebuilt workspace.
#include "core/fork.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "cli_runner.h"
#include "core/event_store.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "core/workspace_snapshot.h"
#include "test_dir.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::TempDir;

NewEvent make(const std::string& type, json payload) {
  NewEvent e;
  e.type = type;
  e.payload = std::move(payload);
  return e;
}

void write(EventStore& s, const std::string& path, const std::string& bytes) {
  std::string sha = s.put_blob(bytes);
  s.append(make(events::WorkspaceWritten::kType,
                {{"path", path}, {"sha", sha}, {"size", bytes.size()}}));
}

// seq 1 created, 2 write a.cc v1, 3 write sub/b.h, 4 eval, 5 write a.cc v2, 6 delete sub/b.h,
// 7 tool.finished with an output blob, 8 run.finished.
RunDir make_run(const TempDir& d) {
  RunDir r = create_run_dir(d.path() / "run");
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kCreate);
  s->append(
      make(events::RunCreated::kType, {{"run_id", "run-orig"}, {"goal", {{"objective", "x"}}}}));
  write(*s, "a.cc", "int v1;");
  write(*s, "sub/b.h", "#pragma once");
  s->append(make(
      events::EvalFinished::kType,
      {{"candidate", "c1"}, {"status", "ok"}, {"result", {{"correct", true}, {"score", 2.0}}}}));
  write(*s, "a.cc", "int v2;");
  s->append(make(events::WorkspaceWritten::kType, {{"path", "sub/b.h"}, {"deleted", true}}));
  std::string out = s->put_blob(std::string(5000, 'o'));
  s->append(
      make(events::ToolFinished::kType, {{"call_id", "t"}, {"ok", true}, {"output_sha", out}}));
  s->append(make(events::RunFinished::kType, {{"reason", "finish"}}));
  return r;
}

TEST(Workspace, SnapshotAtEachSeqFollowsWritesAndDeletes) {
  TempDir d;
  RunDir r = make_run(d);
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kReadOnly);
  EXPECT_TRUE(workspace_at(*s, 1).empty());
  EXPECT_EQ(workspace_at(*s, 3).size(), 2u);
  EXPECT_EQ(workspace_at(*s, 3).at("a.cc"), sha256_hex("int v1;"));
  WorkspaceFiles end = workspace_at(*s, 8);
  EXPECT_EQ(end, (WorkspaceFiles{{"a.cc", sha256_hex("int v2;")}}));
  EXPECT_EQ(end, load_state(*s).workspace);
}

TEST(Workspace, MaterializeWritesFilesAndCanRemoveOthers) {
  TempDir d;
  RunDir r = make_run(d);
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kReadOnly);
  fs::path ws = d.path() / "ws";
  materialize_workspace(*s, workspace_at(*s, 3), ws);
  EXPECT_EQ(read_file(ws / "a.cc"), "int v1;");
  EXPECT_EQ(read_file(ws / "sub/b.h"), "#pragma once");
  materialize_workspace(*s, workspace_at(*s, 6), ws, /*remove_others=*/true);
  EXPECT_EQ(read_file(ws / "a.cc"), "int v2;");
  EXPECT_FALSE(fs::exists(ws / "sub/b.h"));
}

TEST(Workspace, MissingBlobAndEscapingPathAreRefused) {
  TempDir d;
  RunDir r = make_run(d);
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kReadOnly);
  EXPECT_THROW(materialize_workspace(*s, {{"a.cc", sha256_hex("never stored")}}, d.path() / "w"),
               StoreError);
  EXPECT_THROW(materialize_workspace(*s, {{"../evil", sha256_hex("int v1;")}}, d.path() / "w"),
               StoreError);
  EXPECT_FALSE(is_safe_relative_path("/etc/passwd"));
  EXPECT_FALSE(is_safe_relative_path("a/../../b"));
  EXPECT_FALSE(is_safe_relative_path("a//b"));
  EXPECT_TRUE(is_safe_relative_path("src/kernel.cc"));
}

TEST(Workspace, MaterializeOverPlantedLinksWritesAndDeletesNothingOutside) {
  TempDir d;
  RunDir r = make_run(d);
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kReadOnly);
  fs::path host = d.path() / "host";
  fs::create_directories(host);
  testing::write_file(host / "a.cc", "host file");
  testing::write_file(host / "keep.txt", "host keep");
  fs::path ws = d.path() / "ws";
  fs::create_directories(ws);
  // What a model's `run` can leave: the logged file as a link out, the logged folder as a link to
  // a host folder, an unlogged link to a host file, and a FIFO.
  fs::create_symlink(host / "a.cc", ws / "a.cc");
  fs::create_symlink(host, ws / "sub");
  fs::create_symlink(host / "keep.txt", ws / "extra");
  ASSERT_EQ(::mkfifo((ws / "fifo").c_str(), 0644), 0);
  materialize_workspace(*s, workspace_at(*s, 3), ws, /*remove_others=*/true);
  EXPECT_EQ(read_file(host / "a.cc"), "host file");
  EXPECT_EQ(read_file(host / "keep.txt"), "host keep");
  EXPECT_FALSE(fs::exists(host / "b.h"));
  EXPECT_FALSE(fs::is_symlink(ws / "a.cc"));
  EXPECT_EQ(read_file(ws / "a.cc"), "int v1;");
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(ws / "sub")));
  EXPECT_EQ(read_file(ws / "sub/b.h"), "#pragma once");
  EXPECT_FALSE(fs::exists(fs::symlink_status(ws / "extra")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(ws / "fifo")));
}

TEST(Workspace, MaterializeWithoutRemovingStillReplacesLinksInTheWay) {
  TempDir d;
  RunDir r = make_run(d);
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kReadOnly);
  fs::path host = d.path() / "host";
  fs::create_directories(host);
  fs::path ws = d.path() / "ws";
  fs::create_directories(ws);
  fs::create_symlink(host, ws / "sub");
  materialize_workspace(*s, workspace_at(*s, 3), ws);
  EXPECT_TRUE(fs::is_empty(host));
  EXPECT_EQ(read_file(ws / "sub/b.h"), "#pragma once");
}

TEST(Workspace, AFolderWhereTheLogHasAFileIsClearedOnResume) {
  TempDir d;
  RunDir r = make_run(d);
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kReadOnly);
  fs::path ws = d.path() / "ws";
  fs::create_directories(ws / "a.cc/inner");
  EXPECT_THROW(materialize_workspace(*s, workspace_at(*s, 3), ws), StoreError);
  materialize_workspace(*s, workspace_at(*s, 3), ws, /*remove_others=*/true);
  EXPECT_EQ(read_file(ws / "a.cc"), "int v1;");
}

TEST(Workspace, CandidateHashIsOrderFreeAndContentSensitive) {
  WorkspaceFiles a{{"x", "1"}, {"y", "2"}};
  WorkspaceFiles b{{"y", "2"}, {"x", "1"}};
  EXPECT_EQ(candidate_hash(a), candidate_hash(b));
  EXPECT_NE(candidate_hash(a), candidate_hash({{"x", "1"}, {"y", "3"}}));
  EXPECT_EQ(candidate_hash({}), sha256_hex(""));
}

TEST(Fork, NewLogIsThePrefixWithItsBlobsAndANewRunId) {
  TempDir d;
  RunDir r = make_run(d);
  ForkResult f = fork_run(r.root, 3, d.path() / "fork");
  EXPECT_EQ(f.from_run_id, "run-orig");
  EXPECT_NE(f.run_id, "run-orig");
  EXPECT_EQ(f.files, 2u);
  auto src = EventStore::open(r.events_db().string(), EventStore::Mode::kReadOnly);
  auto dst =
      EventStore::open((d.path() / "fork" / "events.db").string(), EventStore::Mode::kReadOnly);
  auto got = dst->read();
  ASSERT_EQ(got.size(), 4u);  // the prefix, then run.forked
  for (int i = 0; i < 3; ++i) EXPECT_EQ(to_json(got[i]), to_json(src->read()[i]));
  EXPECT_EQ(got[3].type, events::RunForked::kType);
  EXPECT_EQ(dst->meta("run_id"), f.run_id);
  EXPECT_TRUE(dst->has_blob(sha256_hex("int v1;")));
  EXPECT_FALSE(dst->has_blob(sha256_hex("int v2;")));  // written after the prefix
  EXPECT_EQ(read_file(d.path() / "fork" / "workspace" / "sub/b.h"), "#pragma once");
  State s = load_state(*dst);
  EXPECT_EQ(s.run_id, f.run_id);
  EXPECT_EQ(s.forked_from, "run-orig");
  EXPECT_FALSE(s.done);
}

TEST(Fork, CopiesBlobsReferencedByAnyPayloadField) {
  TempDir d;
  RunDir r = make_run(d);
  fork_run(r.root, 8, d.path() / "fork");
  auto dst =
      EventStore::open((d.path() / "fork" / "events.db").string(), EventStore::Mode::kReadOnly);
  EXPECT_TRUE(dst->has_blob(sha256_hex(std::string(5000, 'o'))));
  EXPECT_TRUE(load_state(*dst).done);
}

TEST(Fork, SeqOutsideTheLogOrANonEmptyTargetFailsAndLeavesNoTarget) {
  TempDir d;
  RunDir r = make_run(d);
  EXPECT_THROW(fork_run(r.root, 0, d.path() / "f1"), StoreError);
  EXPECT_THROW(fork_run(r.root, 99, d.path() / "f1"), StoreError);
  EXPECT_FALSE(fs::exists(d.path() / "f1"));
  EXPECT_THROW(fork_run(r.root, 2, r.root), StoreError);  // not empty
  EXPECT_THROW(fork_run(d.path() / "nope", 2, d.path() / "f2"), StoreError);
}

TEST(ForkCli, ForkCommandReportsAndStatusOfTheForkWorks) {
  TempDir d;
  RunDir r = make_run(d);
  auto res = testing::run_cli(d, "fork " + r.root.string() + " --at 5 --run-dir " + (d / "f"));
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_NE(res.out.find("at seq 5"), std::string::npos) << res.out;
  res = testing::run_cli(d, "status --json " + (d / "f"));
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_EQ(json::parse(res.out)["events"], 6);
  res = testing::run_cli(d, "fork " + r.root.string() + " --at 100 --run-dir " + (d / "g"));
  EXPECT_EQ(res.code, 1);
  EXPECT_NE(res.err.find("outside the log"), std::string::npos) << res.err;
}

// A run that spent its budget carries on in a fork with more; the original is left as it was.
TEST(ForkCli, AForkCanCarryOnWithMoreBudget) {
  TempDir d;
  RunDir r = make_run(d);
  auto before = testing::run_cli(d, "status --json " + r.root.string());
  auto res = testing::run_cli(d, "fork " + r.root.string() + " --at 5 --run-dir " + (d / "f") +
                                     " --max-tool-calls 400 --max-hours 2");
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_NE(res.out.find("limits replaced"), std::string::npos) << res.out;
  res = testing::run_cli(d, "status --json " + (d / "f"));
  ASSERT_EQ(res.code, 0) << res.err;
  json budget = json::parse(res.out)["budget"]["limits"];
  EXPECT_EQ(budget["max_tool_calls"], 400) << budget.dump();
  EXPECT_DOUBLE_EQ(budget["max_wall_s"].get<double>(), 7200) << budget.dump();
  EXPECT_EQ(testing::run_cli(d, "status --json " + r.root.string()).out, before.out);
  // A limit out of range is a usage error that leaves no fork behind.
  res = testing::run_cli(
      d, "fork " + r.root.string() + " --at 5 --run-dir " + (d / "g") + " --max-tool-calls -5");
  EXPECT_EQ(res.code, 2);
  EXPECT_NE(res.err.find("--max-tool-calls"), std::string::npos) << res.err;
  EXPECT_FALSE(std::filesystem::exists(d / "g"));
}

}  // namespace
}  // namespace marathon
