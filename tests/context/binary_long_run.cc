// The long run through the real binary: `marathon run` on the tiny task against the scripted
// OpenAI-compatible server with a 32k window and 1,200 tool calls. The server records every
// request: each stays under the window, the request near step 1,150 still carries the goal block
// and the dead ends noted at step 50, and the log holds compaction events.
#include <gtest/gtest.h>

#include <atomic>

#include "../loop/loop_test_support.h"
#include "context/goal_block.h"
#include "context/token_estimate.h"
#include "core/checkpoint.h"
#include "core/compaction_log.h"
#include "core/state_json.h"
#include "scripted_llm_server.h"

namespace marathon::context {
namespace {

namespace fs = std::filesystem;
using marathon::testing::ScriptedLlmServer;
using marathon::testing::ScriptedResponse;
using marathon::testing::TempDir;

const std::vector<std::string> kDeadEnds = {
    "DEAD-END-A: doubling the value twice overflows the checker",
    "DEAD-END-B: negative values are rejected",
    "DEAD-END-C: writing the value in hex is not parsed"};

bool is_summary_request(const json& req) {
  const json& m = req.value("messages", json::array());
  return !m.empty() && m[0].value("content", "").rfind("You compact", 0) == 0;
}

json call(const std::string& name, json args) {
  return {{"name", name}, {"arguments", std::move(args)}};
}

TEST(BinaryLongRun, TwelveHundredToolCallsIn32kWindowKeepGoalAndDeadEnds) {
  TempDir tmp("ctx-long");
  std::atomic<int> step{0};
  std::string padding;
  for (int i = 0; i < 60; ++i)
    padding += "# padding line " + std::to_string(i) + " of the solution\n";
  ScriptedLlmServer server([&](size_t, const json& req) -> ScriptedResponse {
    const int64_t tokens = estimate_request_tokens(req.value("messages", json::array()),
                                                   req.value("tools", json::array()));
    if (is_summary_request(req)) {
      return marathon::testing::openai_text(
          "Summary: values 1..N written and evaluated; larger is better; see the ledger.",
          static_cast<int>(tokens), 40);
    }
    int s = step++;
    json calls;
    if (s == 50) {
      calls = json::array();
      for (const std::string& d : kDeadEnds)
        calls.push_back(call("note", {{"kind", "dead_end"}, {"text", d}}));
    } else if (s % 20 == 19) {
      calls = json::array({call("evaluate", {{"strategy", "value " + std::to_string(s)}})});
    } else if (s % 2 == 0) {
      calls = json::array(
          {call("write_file", {{"path", "solution.txt"},
                               {"content", "value = " + std::to_string(s) + "\n" + padding}})});
    } else {
      calls = json::array({call("read_file", {{"path", "solution.txt"}})});
    }
    return marathon::testing::openai_tool_calls(calls, "step " + std::to_string(s),
                                                static_cast<int>(tokens), 30);
  });
  fs::path run = tmp / "run";
  int rc = marathon::testing::run_binary(
      {"run", marathon::testing::tiny_task().string(), "--run-dir", run.string(), "--policy", "llm",
       "--model", "openai:scripted", "--base-url", server.base_url(), "--context-window", "32000",
       "--max-tool-calls", "1200", "--quiet"},
      {{"OPENAI_API_KEY", "scripted-test-key"}}, tmp / "run.log", 900);
  ASSERT_EQ(rc, 0) << marathon::testing::read_text(tmp / "run.log");

  std::vector<marathon::testing::RecordedRequest> reqs = server.requests();
  size_t turns = 0, summaries = 0;
  bool checked_late = false;
  for (const auto& r : reqs) {
    ASSERT_TRUE(r.body.is_object());
    const int64_t est = estimate_request_tokens(r.body.value("messages", json::array()),
                                                r.body.value("tools", json::array()));
    EXPECT_LE(est, 32000) << "request " << r.index;
    EXPECT_LE(static_cast<int64_t>(r.bytes) / 4, 32000) << "request " << r.index;
    if (is_summary_request(r.body)) {
      ++summaries;
      continue;
    }
    if (++turns == 1150) {
      const std::string all = r.body["messages"].dump();
      EXPECT_NE(all.find(kGoalBlockHeading), std::string::npos);
      for (const std::string& d : kDeadEnds) EXPECT_NE(all.find(d), std::string::npos) << d;
      checked_late = true;
    }
  }
  EXPECT_TRUE(checked_late) << "only " << turns << " model turns";
  std::vector<Event> events = marathon::testing::load_events(run);
  State s = fold(events);
  EXPECT_GE(s.used.tool_calls, 1200);
  int compaction_events = 0;
  for (const Event& e : events) compaction_events += e.type.rfind("compaction.", 0) == 0;
  EXPECT_GT(compaction_events, 0);
  // The runner left fold checkpoints on the way, and the newest is the fold of the log up to it.
  auto store = EventStore::open((run / "events.db").string(), EventStore::Mode::kReadOnly);
  std::optional<State> cp = read_checkpoint(*store, s.last_seq);
  ASSERT_TRUE(cp.has_value()) << "no checkpoint in a log of " << events.size() << " events";
  EXPECT_GE(cp->last_seq, kCheckpointEvery);
  std::vector<Event> prefix(events.begin(), events.begin() + cp->last_seq);
  EXPECT_EQ(state_to_json(*cp).dump(), state_to_json(fold(prefix)).dump());
  std::printf("%zu model turns, %zu summariser calls, %d compaction events, %lld tool calls\n",
              turns, summaries, compaction_events, static_cast<long long>(s.used.tool_calls));
}

}  // namespace
}  // namespace marathon::context
