#include "eval/result_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/event_store.h"

namespace marathon::eval {
namespace {

namespace fs = std::filesystem;

TaskSpec toy_task() {
  return parse_task(
      "name = \"t\"\ndescription = \"d\"\n"
      "[files]\nstarter = [\"kernel.cc\"]\neditable = [\"kernel.cc\", \"src/*.h\"]\n"
      "[goal]\nmetric = \"speedup\"\ndirection = \"max\"\n"
      "[evaluator]\ncommand = [\"./eval.sh\"]\nversion = \"1\"\ntimeout_s = 10\n",
      "task.toml", "");
}

TEST(CandidateHash, OnlyEditableFilesCount) {
  TaskSpec t = toy_task();
  std::map<std::string, std::string> ws = {{"kernel.cc", "aa"}, {"notes.txt", "bb"}};
  std::string h = candidate_hash_of(t, ws);
  ws["notes.txt"] = "cc";  // not editable: same candidate
  EXPECT_EQ(candidate_hash_of(t, ws), h);
  ws["kernel.cc"] = "dd";
  EXPECT_NE(candidate_hash_of(t, ws), h);
  ws["kernel.cc"] = "aa";
  ws["src/x.h"] = "ee";  // a new editable file: a new candidate
  EXPECT_NE(candidate_hash_of(t, ws), h);
}

TEST(CandidateHash, PathAndContentAreNotInterchangeable) {
  EXPECT_NE(candidate_hash({{"a", "bc"}}), candidate_hash({{"ab", "c"}}));
  EXPECT_NE(candidate_hash({{"a", "x"}, {"b", "y"}}), candidate_hash({{"a", "y"}, {"b", "x"}}));
}

TEST(CacheKey, ChangesWithEachIngredientOnly) {
  TaskSpec t = toy_task();
  const std::string k = cache_key(t, "cand", "cpu");
  EXPECT_EQ(cache_key(t, "cand", "cpu"), k);
  EXPECT_EQ(cache_key(to_json(t), "cand", "cpu"), k);  // same key from the logged spec
  EXPECT_NE(cache_key(t, "cand2", "cpu"), k);
  EXPECT_NE(cache_key(t, "cand", "NVIDIA H200"), k);
  TaskSpec v = t;
  v.evaluator.version = "2";
  EXPECT_NE(cache_key(v, "cand", "cpu"), k);
  TaskSpec r = t;
  r.rules["banned_imports"] = json::array({"fla"});
  EXPECT_NE(cache_key(r, "cand", "cpu"), k);
  TaskSpec moved = t;
  moved.dir = "/somewhere/else";  // the folder's location is not part of the task
  EXPECT_EQ(cache_key(moved, "cand", "cpu"), k);
}

TEST(CacheKey, SurvivesAJsonRoundTripThroughTheLog) {
  TaskSpec t = toy_task();
  t.goal.target = 7.25;
  json logged = json::parse(to_json(t).dump(2));
  EXPECT_EQ(cache_key(logged, "c", "cpu"), cache_key(t, "c", "cpu"));
}

TEST(Device, FromNvidiaSmiOutput) {
  EXPECT_EQ(device_from_nvidia_smi(std::nullopt), "cpu");
  EXPECT_EQ(device_from_nvidia_smi(std::string("")), "cpu");
  EXPECT_EQ(device_from_nvidia_smi(std::string("NVIDIA H200\nNVIDIA H200\n")), "NVIDIA H200");
}

TEST(EditableFiles, RegularFilesHashByContentAndALinkAsALinkNeverSkipped) {
  fs::path d = fs::temp_directory_path() / ("marathon-cand-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "src");
  std::ofstream(d / "kernel.cc") << "k";
  std::ofstream(d / "src" / "a.h") << "h";
  std::ofstream(d / "other.txt") << "o";
  fs::create_symlink(d / "kernel.cc", d / "src" / "link.h");
  auto files = editable_files(toy_task(), d);
  EXPECT_EQ(files.size(), 3u);
  EXPECT_EQ(files["kernel.cc"], sha256_hex("k"));
  EXPECT_EQ(files["src/a.h"], sha256_hex("h"));
  EXPECT_EQ(files["src/link.h"], "link:" + (d / "kernel.cc").string());
  fs::remove_all(d);
  EXPECT_THROW(editable_files(toy_task(), d), std::runtime_error);
}

TEST(EditableFiles, RepointingALinkedEditableFileChangesTheCandidateHash) {
  fs::path d = fs::temp_directory_path() / ("marathon-cand-link-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  std::ofstream(d / "good.txt") << "right";
  std::ofstream(d / "bad.txt") << "wrong";
  fs::create_symlink("good.txt", d / "kernel.cc");
  std::string good = candidate_hash(editable_files(toy_task(), d));
  fs::remove(d / "kernel.cc");
  fs::create_symlink("bad.txt", d / "kernel.cc");
  std::string bad = candidate_hash(editable_files(toy_task(), d));
  EXPECT_NE(good, bad);
  EXPECT_NE(good, candidate_hash({}));
  fs::remove_all(d);
}

TEST(EditableFiles, AFifoAmongTheEditableFilesIsNamedNotOpened) {
  fs::path d = fs::temp_directory_path() / ("marathon-cand-fifo-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  ASSERT_EQ(::mkfifo((d / "kernel.cc").c_str(), 0644), 0);
  ::alarm(20);  // opening the FIFO would block: the alarm ends the binary instead of hanging
  auto files = read_candidate(toy_task(), d);
  ::alarm(0);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].hash_value, "special:FIFO");
  EXPECT_NE(candidate_refusal(toy_task(), files).find("'kernel.cc' is a FIFO"), std::string::npos);
  fs::remove_all(d);
}

TEST(CandidateRefusal, NoEditableFileOrALinkIsNoCandidate) {
  TaskSpec t = toy_task();
  std::string none = candidate_refusal(t, {});
  EXPECT_NE(none.find("none of the task's editable files"), std::string::npos) << none;
  CandidateFile link{"kernel.cc", EntryKind::kLink, "", "link:good.txt"};
  std::string l = candidate_refusal(t, {link});
  EXPECT_NE(l.find("'kernel.cc' is a symbolic link (-> good.txt)"), std::string::npos) << l;
  CandidateFile file{"kernel.cc", EntryKind::kFile, "k", sha256_hex("k")};
  EXPECT_EQ(candidate_refusal(t, {file}), "");
}

TEST(CachedResult, OnlyOkEntriesAreServed) {
  State s;
  s.eval_cache["k1"] = json{{"candidate", "c"},
                            {"status", "ok"},
                            {"result", {{"correct", true}, {"score", 2.0}}},
                            {"seq", 5}};
  s.eval_cache["k2"] =
      json{{"candidate", "c"}, {"status", "timeout"}, {"result", {{"correct", false}}}, {"seq", 6}};
  auto hit = cached_result(s, "k1");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->result["score"], 2.0);
  EXPECT_FALSE(cached_result(s, "k2").has_value());  // a timeout may be transient: run again
  EXPECT_FALSE(cached_result(s, "nope").has_value());
}

}  // namespace
}  // namespace marathon::eval
