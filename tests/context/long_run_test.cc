// A long scripted run driven through the context module alone (the loop's binary-level version is
// in loop_context_test.cc): 1,200 tool calls in a 32k-token window.
#include <gtest/gtest.h>

#include <chrono>

#include "context/compaction.h"
#include "context/goal_block.h"
#include "context/token_estimate.h"
#include "log_builder.h"
#include "policy/policy.h"

namespace marathon::context {
namespace {

using testing::filler;
using testing::LogBuilder;

class Summariser : public Policy {
 public:
  int calls = 0;
  std::string name() const override { return "scripted"; }
  PolicyReply next(const PolicyRequest& r) override {
    ++calls;
    PolicyReply reply;
    reply.prompt_tokens = estimate_request_tokens(r.messages, r.tools);
    reply.completion_tokens = 200;
    if (calls % 7 == 0) {  // now and then the summariser fails: the structural fallback steps in
      reply.error = json{{"kind", "transport"}, {"message", "HTTP 503"}};
      return reply;
    }
    reply.message = json{{"role", "assistant"},
                         {"content", "Summary " + std::to_string(calls) +
                                         ": tiled 64x64, unrolled by 4, vectorised the inner loop; "
                                         "best so far from the blocked variant. " +
                                         filler(1500)}};
    return reply;
  }
};

json tool_schemas() {
  json tools = json::array();
  for (const char* name : {"read_file", "write_file", "edit_file", "list_files", "grep", "run",
                           "evaluate", "note", "revert", "finish", "recall"}) {
    tools.push_back(
        {{"type", "function"},
         {"function",
          {{"name", name},
           {"description", std::string("Tool ") + name + ": " + filler(300)},
           {"parameters",
            {{"type", "object"},
             {"properties", {{"path", {{"type", "string"}}}, {"text", {{"type", "string"}}}}}}}}}});
  }
  return tools;
}

TEST(LongRun, TwelveHundredToolCallsStayInsideA32kWindowAndRememberStepFifty) {
  LogBuilder b;
  b.created(32000, 1200);
  ContextConfig c = ContextConfig::from_run_config(b.state.config);
  ASSERT_EQ(c.context_window, 32000);
  const json tools = tool_schemas();
  Summariser summariser;
  int blob_n = 0;
  std::map<std::string, std::string> blobs;
  ContextIO io{[&](const NewEvent& e) { return b.append(e); },
               [&](const std::string& bytes) {
                 std::string sha = "sha" + std::to_string(++blob_n);
                 blobs[sha] = bytes;
                 return sha;
               },
               [&](const std::string& sha) -> std::optional<std::string> { return blobs.at(sha); }};

  const std::vector<std::string> dead_ends = {
      "DEAD-END-A: double buffering the B tile is slower (bank conflicts)",
      "DEAD-END-B: unroll by 16 spills registers, 0.6x",
      "DEAD-END-C: OpenMP over the k loop races on C"};
  int64_t max_tokens = 0, max_bytes = 0;
  for (int step = 0; step < 1200; ++step) {
    CompactionPlan plan = plan_compaction(b.state, b.events, c, tools);
    if (plan.needed())
      run_compaction(plan, b.state, b.events, c, summariser_of(summariser, nullptr), io, tools);
    Prompt p = build_prompt(b.state, b.events, c, tools);
    const std::string bytes = p.messages.dump() + tools.dump();
    max_tokens = std::max(max_tokens, p.tokens_estimate);
    max_bytes = std::max<int64_t>(max_bytes, static_cast<int64_t>(bytes.size()));
    ASSERT_LE(p.tokens_estimate, c.context_window) << "step " << step;
    ASSERT_LE(static_cast<int64_t>(bytes.size()) / 3, c.context_window) << "step " << step;
    if (step == 1150) {
      const std::string sys = p.messages.back()["content"];  // the live tail
      EXPECT_NE(sys.find(kGoalBlockHeading), std::string::npos);
      EXPECT_NE(sys.find("Beat the naive matmul by 4x"), std::string::npos);
      for (const std::string& d : dead_ends) EXPECT_NE(sys.find(d), std::string::npos) << d;
    }
    b.add(events::ModelRequest::kType, {{"turn", 1}, {"tokens_estimate", p.tokens_raw}});
    std::string id = "call-" + std::to_string(step);
    std::string name;
    json args;
    std::string output;
    if (step >= 48 && step <= 50) {
      name = "note";
      args = {{"kind", "dead_end"}, {"text", dead_ends[step - 48]}};
      output = "noted";
    } else if (step % 10 == 9) {
      name = "evaluate";
      args = json::object();
      output = "correct: yes, score " + std::to_string(1.0 + step / 1000.0) + "\n" + filler(600);
    } else if (step % 3 == 0) {
      name = "write_file";
      args = {{"path", "kernel.cc"}, {"content", filler(1500, 'a' + step % 9)}};
      output = "wrote kernel.cc (1500 bytes)";
    } else if (step % 3 == 1) {
      name = "read_file";
      args = {{"path", "kernel.cc"}};
      output = filler(2500 + (step * 37) % 2000, 'b' + step % 7);
    } else {
      name = "run";
      args = {{"cmd", "make bench"}};
      output = filler(900 + (step * 13) % 800, 'c');
    }
    b.add(events::ModelResponse::kType,
          {{"message",
            {{"content",
              "Step " + std::to_string(step) + ": next I try variant " + std::to_string(step % 17)},
             {"tool_calls",
              json::array({{{"id", id}, {"name", name}, {"arguments", args.dump()}}})}}},
           {"usage",
            {{"prompt_tokens", static_cast<int64_t>(p.tokens_raw * 1.15)},
             {"completion_tokens", 80}}}});
    b.add(events::ToolStarted::kType, {{"call_id", id}, {"name", name}, {"arguments", args}});
    b.add(events::ToolFinished::kType,
          {{"call_id", id}, {"name", name}, {"ok", true}, {"output", output}});
    if (name == "note")
      b.add(events::LedgerNoted::kType, {{"kind", "dead_end"}, {"text", args["text"]}});
    if (name == "evaluate") {
      b.add(events::EvalFinished::kType,
            {{"candidate", "cand" + std::to_string(step)},
             {"status", "ok"},
             {"result", {{"correct", true}, {"score", 1.0 + step / 1000.0}}},
             {"strategy", "variant " + std::to_string(step % 17)}});
    }
  }
  EXPECT_EQ(b.state.used.tool_calls, 1200);
  int elided = 0, installed = 0, structural = 0;
  for (const Event& e : b.events) {
    if (e.type == events::CompactionElided::kType) ++elided;
    if (e.type == events::CompactionInstalled::kType) {
      ++installed;
      if (e.payload.value("source", "") == "structural") ++structural;
    }
  }
  EXPECT_GT(elided, 0);
  EXPECT_GT(installed, 0);
  EXPECT_GT(structural, 0);
  EXPECT_LT(elided + installed, 400) << "compaction ran far too often";
  EXPECT_NEAR(fit_token_ratio(b.events), 1.15, 0.02);
  std::printf(
      "1200 tool calls: %d elisions, %d summaries (%d structural), %d summariser calls, "
      "max prompt %lld tokens (estimate) / %lld bytes\n",
      elided, installed, structural, summariser.calls, static_cast<long long>(max_tokens),
      static_cast<long long>(max_bytes));
}

}  // namespace
}  // namespace marathon::context
