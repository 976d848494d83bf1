// `marathon run`'s preflight through the real binary: a missing API key, a base URL that takes no
// connection, a malformed --model and a search run on a task without knobs are each refused with
// exit 2 and one line that says what to fix, before a run folder exists; --allow-no-key starts a
// run against a server that needs no key.
#include <gtest/gtest.h>

#include "../loop/loop_test_support.h"
#include "../loop/tiny_script.h"
#include "fresh_repo.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

class Preflight : public ::testing::Test {
 protected:
  int run(std::vector<std::string> extra, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args = {"run", mt::tiny_task().string(), "--run-dir", run_.string(),
                                     "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    // An empty variable counts as unset, whatever the test's own environment holds.
    env.emplace("OPENAI_API_KEY", "");
    env.emplace("ANTHROPIC_API_KEY", "");
    fs::remove(log_);
    int rc = mt::run_binary(args, env, log_, 120);
    out_ = mt::read_text(log_);
    return rc;
  }
  bool says(const std::string& text) const { return out_.find(text) != std::string::npos; }

  mt::TempDir tmp_{"preflight"};
  fs::path run_ = tmp_ / "run";
  fs::path log_ = tmp_ / "out.log";
  std::string out_;
};

TEST_F(Preflight, AMissingKeyIsRefusedWithTheVariableToSet) {
  ScriptedLlmServer server = tiny_server();
  EXPECT_EQ(run({"--model", "openai:gpt-4o", "--base-url", server.base_url()}), 2) << out_;
  EXPECT_TRUE(says("env OPENAI_API_KEY, which is not set")) << out_;
  EXPECT_TRUE(says("--allow-no-key")) << out_;
  EXPECT_FALSE(fs::exists(run_));
  EXPECT_EQ(server.request_count(), 0u);
  // A variable of the user's choice is the one checked.
  EXPECT_EQ(run({"--model", "anthropic:claude-sonnet-4-5", "--base-url", server.base_url(),
                 "--api-key-env", "MY_GATEWAY_KEY"}),
            2)
      << out_;
  EXPECT_TRUE(says("env MY_GATEWAY_KEY")) << out_;
  EXPECT_FALSE(fs::exists(run_));
}

TEST_F(Preflight, AllowNoKeyStartsTheRun) {
  ScriptedLlmServer server = tiny_server();
  EXPECT_EQ(run({"--model", "openai:scripted", "--base-url", server.base_url(), "--allow-no-key"}),
            0)
      << out_;
  EXPECT_TRUE(fs::exists(run_ / "events.db"));
  EXPECT_GT(server.request_count(), 0u);
  // Said once, though the run makes its provider twice (the preflight's policy, the run's).
  const std::string warning = "env OPENAI_API_KEY is not set; requests go without a key";
  const size_t first = out_.find(warning);
  EXPECT_NE(first, std::string::npos) << out_;
  EXPECT_EQ(out_.find(warning, first + 1), std::string::npos) << out_;
}

// `run --json`: stdout holds exactly one JSON object, the summary (stderr keeps the logs).
TEST_F(Preflight, RunJsonPrintsOneSummaryObject) {
  ScriptedLlmServer server = tiny_server();
  const fs::path out = tmp_ / "stdout.json";
  std::string cmd = "exec " + mt::sh_quote(MARATHON_BINARY);
  for (const std::string& a : tiny_run_args(run_, server.base_url())) cmd += " " + mt::sh_quote(a);
  cmd += " --json >" + mt::sh_quote(out.string()) + " 2>" + mt::sh_quote(log_.string());
  mt::Child c({"/bin/sh", "-c", cmd}, {}, tmp_ / "sh.log");
  ASSERT_EQ(c.wait_for(120).value_or(-1), 0) << mt::read_text(log_);
  json j = json::parse(mt::read_text(out));  // throws when anything else is on stdout
  EXPECT_EQ(j["outcome"], "finished");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["run_dir"], run_.string());
  EXPECT_EQ(j["best_score"], 5);
  EXPECT_TRUE(j.contains("budget")) << j.dump();
}

TEST_F(Preflight, ABaseUrlThatTakesNoConnectionIsRefused) {
  // A port nothing listens on: bound, then closed.
  std::string url;
  {
    ScriptedLlmServer gone = tiny_server();
    url = gone.base_url();
  }
  EXPECT_EQ(run({"--model", "vllm:scripted", "--base-url", url}), 2) << out_;
  EXPECT_TRUE(says("cannot be reached")) << out_;
  EXPECT_TRUE(says(url)) << out_;
  EXPECT_FALSE(fs::exists(run_));
}

TEST_F(Preflight, AMalformedModelOrASearchWithoutKnobsLeavesNoFolder) {
  EXPECT_EQ(run({"--model", "gpt-4o"}), 2) << out_;
  EXPECT_TRUE(says("expected PROVIDER:MODEL")) << out_;
  EXPECT_FALSE(fs::exists(run_));
  EXPECT_EQ(run({"--policy", "search"}), 2) << out_;
  EXPECT_TRUE(says("declares no knobs")) << out_;
  EXPECT_FALSE(fs::exists(run_));
}

// A server that only answers 503 with a retry-after of 30 s: the retries stop where the run's
// wall budget ends (3.6 s), and the run finishes on its budget instead of waiting out each wait.
TEST_F(Preflight, RetriesOfAFailingServerStopAtTheWallBudget) {
  ScriptedLlmServer server([](size_t, const json&) {
    ScriptedResponse busy;
    busy.status = 503;
    busy.headers["retry-after"] = "30";  // each wait alone longer than the whole budget
    busy.body = {{"error", {{"message", "overloaded"}}}};
    return busy;
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(
      run({"--model", "vllm:scripted", "--base-url", server.base_url(), "--max-hours", "0.001"}), 0)
      << out_;
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 20.0) << out_;
  EXPECT_TRUE(says("the run's time budget leaves")) << out_;
  State s = mt::load_state(run_);
  EXPECT_TRUE(s.done) << out_;
  EXPECT_EQ(s.finish_reason, "budget") << out_;
}

}  // namespace
}  // namespace marathon
