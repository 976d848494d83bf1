#include "context/compaction.h"

#include <gtest/gtest.h>

#include <map>

#include "context/goal_block.h"
#include "context/token_estimate.h"
#include "log_builder.h"
#include "policy/policy.h"

namespace marathon::context {
namespace {

using testing::filler;
using testing::LogBuilder;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A summariser that answers from a script: text, or an error, or throws.
class ScriptedSummariser : public Policy {
 public:
  std::string text =
      "Tried tiling 32/64/128 (64 best, score 1.9); unroll 16 spilled. Next: vectorise.";
  bool fail = false;
  bool throws = false;
  bool usage_rejected = false;  // the provider's usage was not believed: ours is an estimate
  int calls = 0;
  std::string last_prompt;
  std::string name() const override { return "scripted"; }
  PolicyReply next(const PolicyRequest& r) override {
    ++calls;
    last_prompt = r.messages.dump();
    if (throws) throw std::runtime_error("connection reset");
    PolicyReply reply;
    reply.provider = "openai";
    reply.model = "scripted";
    reply.prompt_tokens = 1000;
    reply.completion_tokens = 100;
    if (fail) {
      reply.error = json{{"kind", "transport"}, {"message", "HTTP 503 from 127.0.0.1"}};
    } else {
      reply.message = json{{"role", "assistant"}, {"content", text}};
    }
    if (usage_rejected) {
      reply.usage_rejected.emplace();
      reply.usage_rejected->problems = {"usage.prompt_tokens = -5: negative"};
      reply.usage_rejected->estimated = {1000, 100};
    }
    return reply;
  }
};

struct Blobs {
  std::map<std::string, std::string> m;
  int n = 0;
};

ContextIO io_for(LogBuilder& b, Blobs& blobs) {
  ContextIO io;
  io.append = [&b](const NewEvent& e) { return b.append(e); };
  io.put_blob = [&blobs](const std::string& bytes) {
    std::string sha = "blob" + std::to_string(++blobs.n);
    blobs.m[sha] = bytes;
    return sha;
  };
  io.get_blob = [&blobs](const std::string& sha) -> std::optional<std::string> {
    auto it = blobs.m.find(sha);
    if (it == blobs.m.end()) return std::nullopt;
    return it->second;
  };
  return io;
}

ContextConfig window(int64_t tokens) {
  ContextConfig c;
  c.context_window = tokens;
  return c;
}

int count(const LogBuilder& b, const std::string& type, const std::string& outcome = "") {
  int n = 0;
  for (const Event& e : b.events) {
    if (e.type == type && (outcome.empty() || e.payload.value("outcome", "") == outcome)) ++n;
  }
  return n;
}

TEST(Compaction, NothingToDoUnderTheSoftThreshold) {
  LogBuilder b;
  b.created();
  b.tool("read_file", {{"path", "k.cc"}}, filler(3000));
  CompactionPlan p = plan_compaction(b.state, b.events, window(32000));
  EXPECT_FALSE(p.needed());
  EXPECT_GT(p.tokens_before, 0);
}

TEST(Compaction, ElisionAloneWhenItBringsThePromptUnderTheThreshold) {
  LogBuilder b;
  b.created(8000);
  for (int i = 0; i < 8; ++i) b.tool("read_file", {{"path", "k.cc"}}, filler(2500, 'a' + i));
  ContextConfig c = window(8000);
  CompactionPlan p = plan_compaction(b.state, b.events, c);
  ASSERT_EQ(p.action, CompactionPlan::Action::kElide);
  EXPECT_GT(p.tokens_before, c.soft_tokens());
  Blobs blobs;
  CompactionResult r = run_compaction(p, b.state, b.events, c, nullptr, io_for(b, blobs));
  ASSERT_EQ(r.appended.size(), 1u);
  EXPECT_EQ(r.appended[0].type, events::CompactionElided::kType);
  EXPECT_LT(r.tokens_after, r.tokens_before);
  Prompt prompt = build_prompt(b.state, b.events, c);
  EXPECT_LE(prompt.tokens_estimate, c.soft_tokens());
  EXPECT_TRUE(contains(prompt.messages.dump(), "[output elided: recall(seq="));
  EXPECT_FALSE(plan_compaction(b.state, b.events, c).needed());
}

LogBuilder long_log(int steps, int64_t window_tokens) {
  LogBuilder b;
  b.created(window_tokens);
  for (int i = 0; i < steps; ++i) {
    b.tool("write_file", {{"path", "kernel.cc"}, {"content", filler(1200, 'a' + i % 5)}},
           "wrote kernel.cc", "Trying variant " + std::to_string(i) + " " + filler(200));
  }
  return b;
}

TEST(Compaction, SummaryWhenElisionCannotFreeEnough) {
  LogBuilder b = long_log(60, 16000);
  ContextConfig c = window(16000);
  CompactionPlan p = plan_compaction(b.state, b.events, c);
  ASSERT_EQ(p.action, CompactionPlan::Action::kSummarise);
  ScriptedSummariser s;
  Blobs blobs;
  CompactionResult r =
      run_compaction(p, b.state, b.events, c, summariser_of(s, nullptr), io_for(b, blobs));
  EXPECT_EQ(s.calls, 1);
  EXPECT_EQ(r.outcome, "compacted");
  EXPECT_EQ(r.source, "model");
  ASSERT_TRUE((b.state.compaction.installed_seq != 0));
  EXPECT_EQ(b.state.compaction.summary, s.text);
  EXPECT_EQ(b.state.compaction.summarized_through, p.summarize_through);
  EXPECT_EQ(count(b, events::CompactionProposed::kType), 1);
  // The summariser call is logged as a model response (budgets count it), not as a turn.
  EXPECT_EQ(b.state.used.model_calls, 60 + 1);
  const Event& inst = b.events.back();
  EXPECT_EQ(inst.type, events::CompactionInstalled::kType);
  for (const char* k :
       {"trigger", "outcome", "summarized_through", "tokens_before", "tokens_after", "source"}) {
    EXPECT_TRUE(inst.payload.contains(k)) << k;
  }
  Prompt prompt = build_prompt(b.state, b.events, c);
  EXPECT_TRUE(contains(prompt.messages[1]["content"], s.text));
  EXPECT_LE(prompt.tokens_estimate, c.soft_tokens());
  EXPECT_EQ(prompt.units_omitted, 0);
}

// A summariser reply whose usage is the runtime's estimate is logged as the runner logs a turn's:
// llm.usage_rejected (naming the purpose) right before its model.response, which says so.
TEST(Compaction, SummariserUsageThatWasNotBelievedIsLoggedAsSuch) {
  LogBuilder b = long_log(60, 16000);
  ContextConfig c = window(16000);
  CompactionPlan p = plan_compaction(b.state, b.events, c);
  ASSERT_EQ(p.action, CompactionPlan::Action::kSummarise);
  ScriptedSummariser s;
  s.usage_rejected = true;
  Blobs blobs;
  CompactionResult r =
      run_compaction(p, b.state, b.events, c, summariser_of(s, nullptr), io_for(b, blobs));
  EXPECT_EQ(r.outcome, "compacted");
  ASSERT_EQ(count(b, events::LlmUsageRejected::kType), 1);
  size_t at = 0;
  while (b.events[at].type != events::LlmUsageRejected::kType) ++at;
  auto w = payload_of<events::LlmUsageRejected>(b.events[at]);
  EXPECT_EQ(w.purpose, events::ModelResponse::kPurposeCompaction);
  EXPECT_EQ(w.provider, "openai");
  EXPECT_EQ(w.problems, std::vector<std::string>{"usage.prompt_tokens = -5: negative"});
  ASSERT_LT(at + 1, b.events.size());
  ASSERT_EQ(b.events[at + 1].type, events::ModelResponse::kType);
  auto resp = payload_of<events::ModelResponse>(b.events[at + 1]);
  EXPECT_EQ(resp.purpose, events::ModelResponse::kPurposeCompaction);
  EXPECT_TRUE(resp.usage_estimated);
}

TEST(Compaction, FailedSummariserFallsBackToAStructuralSummary) {
  for (int mode = 0; mode < 4; ++mode) {
    LogBuilder b = long_log(60, 16000);
    ContextConfig c = window(16000);
    ScriptedSummariser s;
    if (mode == 0) s.fail = true;
    if (mode == 1) s.text = "   ";
    if (mode == 2) s.text = filler(40000);  // far above max_summary
    if (mode == 3) s.throws = true;
    Blobs blobs;
    CompactionResult r = run_compaction(plan_compaction(b.state, b.events, c), b.state, b.events, c,
                                        summariser_of(s, nullptr), io_for(b, blobs));
    EXPECT_EQ(r.outcome, "compacted") << mode;
    EXPECT_EQ(r.source, "structural") << mode;
    ASSERT_TRUE((b.state.compaction.installed_seq != 0));
    EXPECT_TRUE(contains(b.state.compaction.summary, "Summary built by the runtime")) << mode;
    EXPECT_TRUE(contains(b.state.compaction.summary, "write_file x")) << mode;
    EXPECT_TRUE(validate_summary(b.state.compaction.summary, c).empty()) << mode;
  }
}

TEST(Compaction, NoSummariserMeansStructuralWithoutAModelCall) {
  LogBuilder b = long_log(60, 16000);
  ContextConfig c = window(16000);
  Blobs blobs;
  CompactionResult r = run_compaction(plan_compaction(b.state, b.events, c), b.state, b.events, c,
                                      nullptr, io_for(b, blobs));
  EXPECT_EQ(r.source, "structural");
  EXPECT_EQ(count(b, events::ModelResponse::kType), 60);
}

TEST(Compaction, NoopIsRecordedOnceAndNotRetriedEveryTurn) {
  // A window so small that the pinned part alone is over the soft threshold.
  LogBuilder b;
  b.created(700);
  for (int i = 0; i < 40; ++i) {
    b.add(events::LedgerNoted::kType,
          {{"kind", "dead_end"}, {"text", "dead end " + std::to_string(i)}});
  }
  b.tool("note", {}, "ok");
  ContextConfig c = window(700);
  CompactionPlan p = plan_compaction(b.state, b.events, c);
  ASSERT_EQ(p.action, CompactionPlan::Action::kNoop);
  Blobs blobs;
  run_compaction(p, b.state, b.events, c, nullptr, io_for(b, blobs));
  EXPECT_EQ(b.state.compaction.noop_seq, b.events.back().seq);
  b.tool("note", {}, "ok");  // a little growth: still not worth another try
  EXPECT_FALSE(plan_compaction(b.state, b.events, c).needed());
  for (int i = 0; i < 10; ++i) b.tool("note", {}, filler(400));
  EXPECT_TRUE(plan_compaction(b.state, b.events, c).needed());  // grew: worth another look
}

TEST(Compaction, ManualRequestIsServedEvenUnderTheThresholdAndClearsTheRequest) {
  LogBuilder b;
  b.created();
  for (int i = 0; i < 5; ++i) b.tool("read_file", {{"path", "k.cc"}}, filler(1000));
  b.add(events::CompactionRequested::kType, {{"trigger", "manual"}});
  ContextConfig c = window(32000);
  CompactionPlan p = plan_compaction(b.state, b.events, c);
  ASSERT_TRUE(p.needed());
  EXPECT_EQ(p.trigger, "manual");
  ScriptedSummariser s;
  Blobs blobs;
  run_compaction(p, b.state, b.events, c, summariser_of(s, nullptr), io_for(b, blobs));
  EXPECT_EQ(b.state.compaction.pending_request_seq, 0);
  EXPECT_EQ(b.events.back().type, events::CompactionInstalled::kType);
  EXPECT_EQ(b.events.back().payload["trigger"], "manual");
  EXPECT_FALSE(plan_compaction(b.state, b.events, c).needed());
}

TEST(Compaction, OverflowCompactsHarderThanTheThresholdWould) {
  LogBuilder b = long_log(20, 32000);
  ContextConfig c = window(32000);
  ASSERT_FALSE(plan_compaction(b.state, b.events, c).needed());
  CompactionPlan p = plan_compaction(b.state, b.events, c, json::array(), Force::kOverflow);
  ASSERT_EQ(p.action, CompactionPlan::Action::kSummarise);
  EXPECT_EQ(p.reason, "context_length_error");
  ScriptedSummariser s;
  Blobs blobs;
  CompactionResult r =
      run_compaction(p, b.state, b.events, c, summariser_of(s, nullptr), io_for(b, blobs));
  EXPECT_LT(r.tokens_after, r.tokens_before / 2);
}

TEST(Compaction, ContextLengthErrorsAreRecognised) {
  PolicyReply r;
  EXPECT_FALSE(is_context_length_error(r));
  r.error = json{{"kind", "context_length"}, {"message", "x"}};
  EXPECT_TRUE(is_context_length_error(r));
  r.error = json{{"kind", "bad_request"},
                 {"message", "This model's maximum context length is 32768 tokens"}};
  EXPECT_TRUE(is_context_length_error(r));
  r.error = json{{"kind", "auth"}, {"message", "HTTP 401"}};
  EXPECT_FALSE(is_context_length_error(r));
}

// A crash between the summariser's answer and the proposal, or between the proposal and the
// installation: resume finishes the compaction from the log, with no second model call.
TEST(Compaction, ResumeFinishesAnInterruptedCompactionWithoutAskingTheModelAgain) {
  for (int cut_after : {1, 2}) {  // events of stage 2 that made it to the log before the crash
    LogBuilder full = long_log(60, 16000);
    ContextConfig c = window(16000);
    ScriptedSummariser s;
    Blobs blobs;
    const size_t before = full.events.size();
    CompactionPlan p = plan_compaction(full.state, full.events, c);
    run_compaction(p, full.state, full.events, c, summariser_of(s, nullptr), io_for(full, blobs));
    // Rebuild the log as the crash left it: everything up to the cut.
    LogBuilder crashed;
    size_t stage2_seen = 0;
    for (size_t i = 0; i < full.events.size(); ++i) {
      const Event& e = full.events[i];
      if (i >= before &&
          (e.type == events::ModelResponse::kType || e.type == events::CompactionProposed::kType ||
           e.type == events::CompactionInstalled::kType)) {
        if (++stage2_seen > static_cast<size_t>(cut_after)) break;
      }
      crashed.add(e.type, e.payload);
    }
    ASSERT_FALSE((crashed.state.compaction.installed_seq != 0));
    CompactionPlan resume = plan_compaction(crashed.state, crashed.events, c);
    EXPECT_EQ(resume.reason, "resume");
    ScriptedSummariser s2;
    run_compaction(resume, crashed.state, crashed.events, c, summariser_of(s2, nullptr),
                   io_for(crashed, blobs));
    EXPECT_EQ(s2.calls, 0) << cut_after;
    ASSERT_TRUE((crashed.state.compaction.installed_seq != 0));
    EXPECT_EQ(crashed.state.compaction.summary, full.state.compaction.summary);
    // The resumed run sends exactly the prompt the uninterrupted one sends.
    EXPECT_EQ(build_prompt(crashed.state, crashed.events, c).messages.dump(),
              build_prompt(full.state, full.events, c).messages.dump());
  }
}

TEST(Compaction, SummaryRequestCarriesPreviousSummaryAndTheTurns) {
  LogBuilder b = long_log(5, 32000);
  SummaryRequest r = summary_request(b.events, window(32000), "EARLIER", 0, b.events.back().seq, 0);
  std::string all = r.messages.dump();
  EXPECT_TRUE(contains(all, "EARLIER"));
  EXPECT_TRUE(contains(all, "Trying variant 4"));
  EXPECT_TRUE(contains(all, "write_file"));
}

}  // namespace
}  // namespace marathon::context
