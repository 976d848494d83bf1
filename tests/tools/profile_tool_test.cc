// `profile`: the view the model gets from the evaluator's answer, the whole report kept as a blob
// that recall(blob=...) pages through, and a profile served from the log when the same candidate
// was profiled before.
#include <gtest/gtest.h>

#include "core/events.h"
#include "tools/tool_profile.h"
#include "tools/tool_recall.h"
#include "tools_test_support.h"

namespace marathon {
namespace {

Event finished(int64_t seq, const std::string& name, bool ok, const std::string& output,
               const std::string& sha) {
  events::ToolFinished f;
  f.call_id = "c" + std::to_string(seq);
  f.name = name;
  f.ok = ok;
  f.output = output;
  f.output_sha = sha;
  Event e;
  e.seq = seq;
  e.type = events::ToolFinished::kType;
  e.payload = f;
  return e;
}

TEST(ProfileView, TheLinesThenTheCandidateAndWhereTheWholeReportIs) {
  json res = {{"profile_ok", true}, {"profile", {"ncu, one call each", "time  17.1 us"}}};
  std::string v =
      profile_view(res, "0123456789abcdef", "NVIDIA H100 80GB HBM3", std::string(64, 'a'), 40000);
  EXPECT_EQ(v.rfind("ncu, one call each\ntime  17.1 us\ncandidate 0123456789ab on NVIDIA H100", 0),
            0u)
      << v;
  EXPECT_NE(
      v.find("(every kernel, every counter, 40 KB): recall(blob=" + std::string(64, 'a') + ")"),
      std::string::npos)
      << v;
}

TEST(ProfileView, AProfileThatDidNotRunShowsTheEvaluatorsLog) {
  json res = {{"profile_ok", false},
              {"profile", json::array()},
              {"log", "profile (not an evaluation): profiling needs a GPU"}};
  std::string v = profile_view(res, "0123456789abcdef", "cpu", "", 0);
  EXPECT_EQ(v.rfind("profile (not an evaluation): profiling needs a GPU\n", 0), 0u) << v;
  EXPECT_EQ(v.find("recall("), std::string::npos) << v;
}

TEST(LoggedProfile, TheLatestSuccessfulProfileWithTheKeyIsFound) {
  std::map<std::string, std::string> blobs = {
      {"s1", profile_blob("profile K", "old report")},
      {"s2", profile_blob("profile OTHER", "another candidate")},
      {"s3", profile_blob("profile K", "new report")},
  };
  auto blob = [&](const std::string& sha) -> std::optional<std::string> {
    auto it = blobs.find(sha);
    return it == blobs.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  std::vector<Event> log = {finished(3, "profile", true, "view 1", "s1"),
                            finished(5, "evaluate", true, "eval", "s3"),  // not a profile
                            finished(7, "profile", true, "view 2", "s2"),
                            finished(9, "profile", true, "view 3", "s3"),
                            finished(11, "profile", false, "failed", "s1")};  // failed: skipped
  auto found = find_logged_profile(log, "profile K", blob);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->seq, 9);
  EXPECT_EQ(found->output, "view 3");
  EXPECT_EQ(found->blob_sha, "s3");
  EXPECT_FALSE(find_logged_profile(log, "profile NEW", blob));
  EXPECT_FALSE(find_logged_profile(log, "profile", blob));  // a prefix of a key is no key
}

TEST(Recall, ABlobIsPagedWithItsOwnCall) {
  testing::TempWorkspace w;
  std::string report = profile_blob("profile K", std::string(20000, 'x'));
  std::string sha = w.ctx.put_blob(report);
  auto recall = make_recall_tool();
  ToolResult r = recall->run({{"blob", sha}}, w.ctx);
  ASSERT_TRUE(r.ok) << r.output;
  EXPECT_EQ(r.output.rfind("recall(blob=" + sha + "): a blob of the log, bytes 0..16000 of", 0), 0u)
      << r.output.substr(0, 200);
  EXPECT_NE(r.output.find("[more: recall(blob=" + sha + ", offset=16000)]"), std::string::npos);
  ToolResult next = recall->run({{"blob", sha}, {"offset", 16000}}, w.ctx);
  EXPECT_TRUE(next.ok);
  EXPECT_EQ(next.output.find("[more:"), std::string::npos);
  ToolResult missing = recall->run({{"blob", std::string(64, '0')}}, w.ctx);
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.output.find("holds no blob"), std::string::npos) << missing.output;
  ToolResult neither = recall->run(json::object(), w.ctx);
  EXPECT_FALSE(neither.ok);
}

}  // namespace
}  // namespace marathon
