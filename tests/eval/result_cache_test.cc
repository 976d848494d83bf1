#include "eval/result_cache.h"

#include <gtest/gtest.h>
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

TEST(EditableFiles, ReadsOnlyEditableRegularFiles) {
  fs::path d = fs::temp_directory_path() / ("marathon-cand-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "src");
  std::ofstream(d / "kernel.cc") << "k";
  std::ofstream(d / "src" / "a.h") << "h";
  std::ofstream(d / "other.txt") << "o";
  fs::create_symlink(d / "kernel.cc", d / "src" / "link.h");
  auto files = editable_files(toy_task(), d);
  EXPECT_EQ(files.size(), 2u);
  EXPECT_EQ(files["kernel.cc"], sha256_hex("k"));
  EXPECT_EQ(files["src/a.h"], sha256_hex("h"));
  fs::remove_all(d);
  EXPECT_THROW(editable_files(toy_task(), d), std::runtime_error);
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
