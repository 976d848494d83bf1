// A single unit too large for the window (a 2 MB reply, 2 MB of call arguments, a turn of many
// capped outputs): the prompt must still never exceed the hard threshold, the cut must be a logged
// compaction step, and the prompt must say what was cut and how to read it back.
#include <gtest/gtest.h>

#include <map>

#include "context/compaction.h"
#include "context/prompt_builder.h"
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
  PolicyReply next(const PolicyRequest&) override {
    ++calls;
    PolicyReply reply;
    reply.provider = "openai";
    reply.model = "scripted";
    reply.message =
        json{{"role", "assistant"},
             {"content", "Earlier turns: read the kernel, noted findings. Next: tile."}};
    return reply;
  }
};

struct Blobs {
  std::map<std::string, std::string> m;
};

ContextIO io_for(LogBuilder& b, Blobs& blobs) {
  ContextIO io;
  io.append = [&b](const NewEvent& e) { return b.append(e); };
  io.put_blob = [&blobs](const std::string& bytes) {
    std::string sha = "blob" + std::to_string(blobs.m.size() + 1);
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

std::vector<Event> of_type(const LogBuilder& b, const std::string& type) {
  std::vector<Event> out;
  for (const Event& e : b.events) {
    if (e.type == type) out.push_back(e);
  }
  return out;
}

// One step of the loop's context work: plan and run compaction (twice at most, as the runner
// does after a cut), then build the prompt with the same cache.
Prompt step(PromptCache& cache, LogBuilder& b, Policy& summariser, Blobs& blobs,
            Force force = Force::kNone) {
  for (int round = 0; round < 2; ++round) {
    CompactionPlan plan = plan_compaction(cache, b.state, b.events, force);
    if (!plan.needed()) break;
    run_compaction(cache, plan, b.state, b.events, summariser_of(summariser, nullptr),
                   io_for(b, blobs));
  }
  return build_prompt(cache, b.state, b.events);
}

std::string content_of_seq_message(const Prompt& p, const std::string& role,
                                   const std::string& needle) {
  for (const json& m : p.messages) {
    if (m.value("role", "") != role) continue;
    std::string c = m.value("content", "");
    if (c.find(needle) != std::string::npos) return c;
  }
  return "";
}

TEST(OversizedUnit, ATwoMegabyteReplyIsCutSoThePromptStaysUnderTheHardThreshold) {
  LogBuilder b;
  b.created(8000);
  b.tool("read_file", {{"path", "kernel.cc"}}, "int main() { return 0; }");
  const std::string huge = "HEAD-MARK " + filler(2 << 20) + " TAIL-MARK";
  std::string id = b.call("note", {{"kind", "finding"}, {"text", "long thoughts"}}, huge);
  const int64_t reply_seq = b.events[b.events.size() - 2].seq;
  ASSERT_EQ(b.events[b.events.size() - 2].type, events::ModelResponse::kType);
  b.finish(id, "note", "noted");

  const ContextConfig cfg = window(8000);
  PromptCache cache(cfg);
  (void)build_prompt(cache, b.state, b.events);  // the cache has prepared the unit uncut
  Summariser s;
  Blobs blobs;
  Prompt p = step(cache, b, s, blobs);

  EXPECT_LE(p.tokens_estimate, cfg.hard_tokens());
  EXPECT_LE(estimate_request_tokens(p.messages, json::array()), cfg.hard_tokens());
  std::vector<Event> cuts = of_type(b, "compaction.cut");
  ASSERT_EQ(cuts.size(), 1u) << "the cut must be a logged compaction step";
  EXPECT_EQ(cuts[0].payload["cuts"][0]["seq"], reply_seq);
  EXPECT_EQ(cuts[0].payload["reason"], "unit_over_window");
  EXPECT_GT(cuts[0].payload["tokens_before"].get<int64_t>(),
            cuts[0].payload["tokens_after"].get<int64_t>());

  const std::string shown =
      content_of_seq_message(p, "assistant", "recall(seq=" + std::to_string(reply_seq) + ")");
  ASSERT_FALSE(shown.empty()) << "the cut reply must carry a note naming recall(seq=N)";
  EXPECT_EQ(shown.rfind("HEAD-MARK", 0), 0u) << "the head is kept";
  EXPECT_EQ(shown.substr(shown.size() - 9), "TAIL-MARK") << "the tail is kept";
  EXPECT_NE(shown.find(std::to_string(huge.size()) + " bytes"), std::string::npos);
  EXPECT_LT(shown.size(), 64000u);

  // The same bytes as a process that opens the log now builds.
  EXPECT_EQ(p.sha256, build_prompt(b.state, b.events, cfg).sha256);
}

TEST(OversizedUnit, TwoMegabytesOfCallArgumentsAreCut) {
  LogBuilder b;
  b.created(8000);
  std::string id = b.call("write_file", {{"path", "kernel.cc"}, {"content", filler(2 << 20)}},
                          "writing the big table");
  const int64_t reply_seq = b.events[b.events.size() - 2].seq;
  b.finish(id, "write_file", "wrote kernel.cc (2097152 bytes)");

  const ContextConfig cfg = window(8000);
  PromptCache cache(cfg);
  Summariser s;
  Blobs blobs;
  Prompt p = step(cache, b, s, blobs);
  EXPECT_LE(p.tokens_estimate, cfg.hard_tokens());
  ASSERT_EQ(of_type(b, "compaction.cut").size(), 1u);
  bool found = false;
  for (const json& m : p.messages) {
    if (!m.contains("tool_calls")) continue;
    const std::string args = m["tool_calls"][0]["function"]["arguments"];
    found = args.find("recall(seq=" + std::to_string(reply_seq) + ")") != std::string::npos;
    EXPECT_LT(args.size(), 64000u);
  }
  EXPECT_TRUE(found) << "the cut arguments must carry the note";
  EXPECT_EQ(p.sha256, build_prompt(b.state, b.events, cfg).sha256);
}

TEST(OversizedUnit, ATurnOfManyCappedOutputsIsCutToFit) {
  LogBuilder b;
  b.created(8000);
  b.add(events::ModelRequest::kType, {{"turn", 1}, {"tokens_estimate", 0}});
  json calls = json::array();
  for (int i = 0; i < 12; ++i) {
    calls.push_back({{"id", "c" + std::to_string(i)},
                     {"name", "read_file"},
                     {"arguments", json{{"path", "f" + std::to_string(i)}}.dump()}});
  }
  b.add(events::ModelResponse::kType,
        {{"message", {{"content", "reading all"}, {"tool_calls", calls}}},
         {"usage", {{"prompt_tokens", 0}, {"completion_tokens", 10}}},
         {"finish_reason", "tool_calls"}});
  for (int i = 0; i < 12; ++i) {
    std::string cid = "c" + std::to_string(i);
    b.add(events::ToolStarted::kType,
          {{"call_id", cid}, {"name", "read_file"}, {"arguments", json::object()}});
    b.finish(cid, "read_file", filler(60000, static_cast<char>('a' + i)));
  }
  const ContextConfig cfg = window(8000);
  PromptCache cache(cfg);
  Summariser s;
  Blobs blobs;
  Prompt p = step(cache, b, s, blobs);
  EXPECT_LE(p.tokens_estimate, cfg.hard_tokens());
  EXPECT_EQ(p.units_omitted, 0);
  EXPECT_EQ(of_type(b, "compaction.cut").size(), 1u);
  EXPECT_EQ(p.sha256, build_prompt(b.state, b.events, cfg).sha256);
}

TEST(OversizedUnit, AfterTheCutEveryLaterPromptStaysUnderTheHardThreshold) {
  LogBuilder b;
  b.created(8000);
  std::string id = b.call("note", {{"kind", "finding"}, {"text", "x"}}, filler(2 << 20));
  b.finish(id, "note", "noted");
  const ContextConfig cfg = window(8000);
  PromptCache cache(cfg);
  Summariser s;
  Blobs blobs;
  for (int i = 0; i < 40; ++i) {
    Prompt p = step(cache, b, s, blobs);
    ASSERT_LE(p.tokens_estimate, cfg.hard_tokens()) << "step " << i;
    ASSERT_EQ(p.sha256, build_prompt(b.state, b.events, cfg).sha256) << "step " << i;
    b.tool("read_file", {{"path", "kernel.cc"}}, filler(3000, static_cast<char>('a' + i % 20)),
           "step " + std::to_string(i));
  }
  EXPECT_EQ(of_type(b, "compaction.cut").size(), 1u) << "one cut, then the regular stages";
}

TEST(OversizedUnit, AContextLengthErrorCutsAUnitTheEstimateThoughtFit) {
  LogBuilder b;
  b.created(8000);
  // About 3,500 tokens: under the hard threshold by the estimate, too long for the provider.
  std::string id = b.call("note", {{"kind", "finding"}, {"text", "x"}}, filler(14000));
  b.finish(id, "note", "noted");
  const ContextConfig cfg = window(8000);
  PromptCache cache(cfg);
  Prompt before = build_prompt(cache, b.state, b.events);
  ASSERT_LE(before.tokens_estimate, cfg.hard_tokens());
  Summariser s;
  Blobs blobs;
  Prompt after = step(cache, b, s, blobs, Force::kOverflow);
  std::vector<Event> cuts = of_type(b, "compaction.cut");
  ASSERT_EQ(cuts.size(), 1u) << "an overflow must shrink the newest unit too";
  EXPECT_EQ(cuts[0].payload["reason"], "context_length_error");
  EXPECT_LT(after.tokens_estimate, before.tokens_estimate);
}

TEST(OversizedUnit, RunsThatNeverHitItGetNoCut) {
  LogBuilder b;
  b.created(8000);
  const ContextConfig cfg = window(8000);
  PromptCache cache(cfg);
  Summariser s;
  Blobs blobs;
  for (int i = 0; i < 60; ++i) {
    b.tool("read_file", {{"path", "kernel.cc"}}, filler(2500, static_cast<char>('a' + i % 20)),
           "step " + std::to_string(i));
    Prompt p = step(cache, b, s, blobs);
    ASSERT_LE(p.tokens_estimate, cfg.hard_tokens());
  }
  EXPECT_TRUE(of_type(b, "compaction.cut").empty());
}

}  // namespace
}  // namespace marathon::context
