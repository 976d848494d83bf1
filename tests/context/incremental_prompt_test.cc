// The loop keeps one PromptCache for a run and feeds it only the new events each step. Everything
// it gives (compaction plans, prompt bytes, the prompt's sha256, token counts) must be what a fresh
// build from the same log gives: a resumed process starts from scratch and must send the same
// bytes.
#include <gtest/gtest.h>

#include <algorithm>

#include "context/compaction.h"
#include "context/prompt_builder.h"
#include "core/event_store.h"
#include "scripted_log.h"

namespace marathon::context {
namespace {

using testing::filler;
using testing::LogBuilder;
using testing::ScriptedLog;

void expect_same_plan(const CompactionPlan& a, const CompactionPlan& b, int step) {
  EXPECT_EQ(a.action, b.action) << "step " << step;
  EXPECT_EQ(a.trigger, b.trigger) << "step " << step;
  EXPECT_EQ(a.reason, b.reason) << "step " << step;
  EXPECT_EQ(a.tokens_before, b.tokens_before) << "step " << step;
  EXPECT_EQ(a.elide_through, b.elide_through) << "step " << step;
  EXPECT_EQ(a.summarize_through, b.summarize_through) << "step " << step;
}

// Returns false (after recording the failure) when the two prompts differ.
bool expect_same_prompt(const Prompt& cached, const Prompt& scratch, const json& tools, int step) {
  const std::string bytes = scratch.messages.dump();
  EXPECT_EQ(scratch.tokens_raw, estimate_request_tokens(scratch.messages, tools))
      << "step " << step;
  EXPECT_EQ(cached.messages.dump(), bytes) << "step " << step;
  EXPECT_EQ(scratch.sha256, sha256_hex(bytes)) << "step " << step;
  EXPECT_EQ(cached.sha256, scratch.sha256) << "step " << step;
  EXPECT_EQ(cached.tokens_raw, scratch.tokens_raw) << "step " << step;
  EXPECT_EQ(cached.tokens_estimate, scratch.tokens_estimate) << "step " << step;
  EXPECT_EQ(cached.units_total, scratch.units_total) << "step " << step;
  EXPECT_EQ(cached.units_omitted, scratch.units_omitted) << "step " << step;
  return cached.messages.dump() == bytes && cached.sha256 == scratch.sha256;
}

struct Counts {
  int elisions = 0, summaries = 0, noops = 0, overflow = 0, omitted_prompts = 0;
  int paused_prompts = 0;  // prompts that end with a paused turn (no live tail)
  size_t most_kept = 0;    // with drop: the most events the cache was given at once
};

// Drives a scripted run the way the loop does, with one cache for the whole run, and compares
// every plan and prompt with a from-scratch build of the same log. With `drop`, the cache is given
// what the runner keeps: the log less what drop_summarized_events dropped after each prompt.
Counts compare_over_run(int64_t window, unsigned seed, int steps, bool compact, bool drop = false) {
  ScriptedLog log(window, seed);
  PromptCache cache(log.config, log.tools);
  Counts n;
  std::vector<Event> kept;
  auto given = [&]() -> const std::vector<Event>& {
    if (!drop) return log.b.events;
    const int64_t last = kept.empty() ? 0 : kept.back().seq;
    for (size_t i = first_index_after(log.b.events, last); i < log.b.events.size(); ++i) {
      kept.push_back(log.b.events[i]);
    }
    n.most_kept = std::max(n.most_kept, kept.size());
    return kept;
  };
  for (int step = 0; step < steps; ++step) {
    if (compact) {
      const Force force = step % 97 == 96 ? Force::kOverflow : Force::kNone;
      CompactionPlan plan = plan_compaction(cache, log.b.state, given(), force);
      expect_same_plan(
          plan, plan_compaction(log.b.state, log.b.events, log.config, log.tools, force), step);
      if (plan.needed()) {
        n.overflow += force == Force::kOverflow;
        CompactionResult r = run_compaction(cache, plan, log.b.state, given(),
                                            summariser_of(log.summariser, nullptr), log.io());
        n.elisions += r.source == "elision";
        n.summaries += r.source == "model" || r.source == "structural";
        n.noops += r.outcome == "noop";
      }
    }
    Prompt p = build_prompt(cache, log.b.state, given());
    if (drop) drop_summarized_events(log.b.state, kept);
    if (!expect_same_prompt(p, build_prompt(log.b.state, log.b.events, log.config, log.tools),
                            log.tools, step)) {
      break;
    }
    n.omitted_prompts += p.units_omitted > 0;
    n.paused_prompts += p.messages.back()["role"] == "assistant";
    log.turn(p.tokens_raw);
    // The loop gives the messages back once sent, so the next prompt reuses them (now and then it
    // does not, as after a failed request).
    if (log.pick(10) != 0) cache.give_back(std::move(p.messages));
  }
  return n;
}

TEST(IncrementalPrompt, MatchesAFromScratchBuildAtEveryStepOfALongCompactingRun) {
  Counts n = compare_over_run(32000, 7, 1200, true);
  EXPECT_GT(n.elisions, 10);
  EXPECT_GT(n.summaries, 10);
  EXPECT_GT(n.overflow, 5);
  EXPECT_GT(n.paused_prompts, 5);
  std::printf(
      "32k window, 1200 turns: %d elisions, %d summaries, %d no-ops, %d forced, %d paused\n",
      n.elisions, n.summaries, n.noops, n.overflow, n.paused_prompts);
}

// The runner keeps only the events after the installed summary point; the cache given those gives
// what a build from the whole log gives.
TEST(IncrementalPrompt, GivenOnlyTheEventsAfterTheSummaryPointMatchesAFromScratchBuild) {
  Counts n = compare_over_run(32000, 9, 600, true, /*drop=*/true);
  EXPECT_GT(n.summaries, 5);
  EXPECT_GT(n.most_kept, 0u);
  EXPECT_LT(n.most_kept, 1200u) << "the kept events are bounded by the window, not the log";
}

TEST(IncrementalPrompt, MatchesAFromScratchBuildInASmallWindow) {
  Counts n = compare_over_run(8000, 3, 500, true);
  EXPECT_GT(n.summaries, 10);
  EXPECT_GT(n.noops + n.omitted_prompts, 0);
}

TEST(IncrementalPrompt, MatchesAFromScratchBuildWhenTheHardCapLeavesTurnsOut) {
  Counts n = compare_over_run(8000, 5, 300, false);
  EXPECT_GT(n.omitted_prompts, 100);
}

// A summary point inside a unit (a hand-made or foreign log) and one that moves back: the cache
// cannot simply drop the units before it.
TEST(IncrementalPrompt, SummaryPointsInsideAUnitOrBehindTheLastOneGiveTheSameUnits) {
  LogBuilder b;
  b.created(32000);
  ContextConfig cfg = ContextConfig::from_run_config(b.state.config);
  PromptCache cache(cfg);
  auto check = [&](const std::string& what) {
    Prompt a = build_prompt(cache, b.state, b.events);
    Prompt s = build_prompt(b.state, b.events, cfg);
    EXPECT_EQ(a.messages.dump(), s.messages.dump()) << what;
    EXPECT_EQ(a.sha256, s.sha256) << what;
  };
  auto two_calls = [&](const std::string& x, const std::string& y) {
    b.add(events::ModelRequest::kType, {{"turn", 1}});
    b.add(events::ModelResponse::kType,
          {{"message",
            {{"content", "two at once"},
             {"tool_calls", json::array({{{"id", x}, {"name", "run"}, {"arguments", "{}"}},
                                         {{"id", y}, {"name", "run"}, {"arguments", "{}"}}})}}}});
  };
  auto result = [&](const std::string& id) {
    b.add(events::ToolStarted::kType, {{"call_id", id}, {"name", "run"}});
    return b.finish(id, "run", filler(400, 'r'));
  };
  auto install = [&](int64_t through) {
    b.add(events::CompactionInstalled::kType, {{"outcome", "compacted"},
                                               {"summary", "through " + std::to_string(through)},
                                               {"summarized_through", through},
                                               {"trigger", "manual"}});
  };
  for (int i = 0; i < 5; ++i) b.tool("read_file", {{"path", "k.cc"}}, filler(500 + i));
  check("plain");
  // The cut covers the open unit: its second result, logged after the cut, is not shown.
  two_calls("p1", "p2");
  int64_t p1 = result("p1");
  check("open unit");
  install(p1);
  check("cut at the open unit");
  result("p2");
  check("result after the cut");
  b.tool("read_file", {{"path", "k.cc"}}, filler(600));
  check("next turn");
  // The cut falls between the two results of one unit.
  two_calls("q1", "q2");
  int64_t q1 = result("q1");
  result("q2");
  check("second unit");
  install(q1);
  check("cut inside a unit");
  for (int i = 0; i < 3; ++i) b.tool("read_file", {{"path", "k.cc"}}, filler(300 + i));
  check("after the cut");
  install(2);
  check("cut moved back");
  b.tool("read_file", {{"path", "k.cc"}}, filler(700));
  check("after moving back");
}

TEST(IncrementalPrompt, ACacheGivenAnotherLogStartsOver) {
  LogBuilder a, b;
  a.created(32000);
  b.created(32000);
  for (int i = 0; i < 6; ++i) a.tool("read_file", {{"path", "a.cc"}}, filler(300 + i, 'a'));
  for (int i = 0; i < 3; ++i) b.tool("run", {{"cmd", "make"}}, filler(900 + i, 'k'));
  ContextConfig cfg = ContextConfig::from_run_config(a.state.config);
  PromptCache cache(cfg);
  build_prompt(cache, a.state, a.events);
  EXPECT_EQ(build_prompt(cache, b.state, b.events).messages.dump(),
            build_prompt(b.state, b.events, cfg).messages.dump());
  // A prefix of the first log (a fork at an earlier event) too.
  std::vector<Event> prefix(a.events.begin(), a.events.begin() + 9);
  EXPECT_EQ(build_prompt(cache, a.state, prefix).messages.dump(),
            build_prompt(a.state, prefix, cfg).messages.dump());
}

TEST(IncrementalPrompt, TheTokenRatioFitMatchesTheBackwardWalkOverTheLog) {
  ScriptedLog log(32000, 11);
  TokenRatioFit fit;
  TokenRatioFit fit4(4);
  size_t fed = 0;
  for (int step = 0; step < 300; ++step) {
    log.turn(1000 + 37 * step);
    if (step % 40 == 7) {  // a summariser answer right after a request: that request is unpaired
      log.b.add(events::ModelRequest::kType, {{"turn", step}, {"tokens_estimate", 500}});
      log.b.add(events::ModelResponse::kType, {{"purpose", "compaction"},
                                               {"message", {{"content", "s"}}},
                                               {"usage", {{"prompt_tokens", 99999}}}});
    }
    for (; fed < log.b.events.size(); ++fed) {
      fit.add(log.b.events[fed]);
      fit4.add(log.b.events[fed]);
    }
    ASSERT_EQ(fit.ratio(), fit_token_ratio(log.b.events)) << "step " << step;
    ASSERT_EQ(fit4.ratio(), fit_token_ratio(log.b.events, 4)) << "step " << step;
  }
}

}  // namespace
}  // namespace marathon::context
