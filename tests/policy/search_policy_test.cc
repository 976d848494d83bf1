#include "policy/search_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace marathon {
namespace {

using ::testing::HasSubstr;
using Files = std::map<std::string, std::string>;

// Three knobs; the objective peaks at BM=64 BN=128 U=4 and is smooth around it.
const char* kKernel =
    "constexpr int BM = 16;  // marathon:knob [8, 16, 32, 64, 128, 256]\n"
    "constexpr int BN = 32;  // marathon:knob [16, 32, 64, 128, 256]\n"
    "constexpr int U = 1;    // marathon:knob [1, 2, 4, 8]\n"
    "void f() {}\n";

double objective(const KnobConfig& c) {
  return 10.0 - std::abs(c[0] - 3) - 0.7 * std::abs(c[1] - 3) - 1.3 * std::abs(c[2] - 2);
}

std::vector<int> kDims = {6, 5, 4};

// Drives plan_search to the end against `objective`; returns the order of evaluation.
std::vector<SearchStep> drive(int budget, std::map<KnobConfig, double>* results,
                              const SearchOptions& o = {},
                              double (*f)(const KnobConfig&) = objective) {
  std::vector<SearchStep> steps;
  for (int i = 0; i < 1000; ++i) {
    SearchStep s = plan_search(kDims, {1, 1, 0}, *results, budget, o);
    steps.push_back(s);
    if (!s.next) break;
    EXPECT_FALSE(results->count(*s.next)) << "a configuration was scheduled twice";
    (*results)[*s.next] = f(*s.next);
  }
  return steps;
}

TEST(PlanSearch, RoundZeroStartsFromTheStarterConfiguration) {
  SearchStep s = plan_search(kDims, {1, 1, 0}, {}, 40, {});
  ASSERT_TRUE(s.next.has_value());
  EXPECT_EQ(*s.next, (KnobConfig{1, 1, 0}));
  EXPECT_EQ(s.round, 0);
}

TEST(PlanSearch, FindsTheOptimumWithFarFewerEvaluationsThanTheGrid) {
  std::map<KnobConfig, double> results;
  auto steps = drive(60, &results);
  ASSERT_FALSE(steps.back().next.has_value());
  double best = -1e9;
  for (const auto& [c, v] : results) best = std::max(best, v);
  EXPECT_EQ(best, 10.0);                  // the peak (3, 3, 2) was reached
  EXPECT_LT(results.size(), 6u * 5 * 4);  // not an exhaustive grid
}

TEST(PlanSearch, SurvivorsHalveFromRoundToRound) {
  std::map<KnobConfig, double> results;
  SearchOptions o;
  o.initial = 16;
  std::vector<int> survivors_by_round(20, -1);
  for (int i = 0; i < 500; ++i) {
    SearchStep s = plan_search(kDims, {1, 1, 0}, results, 200, o);
    if (!s.next) break;
    if (s.round > 0) survivors_by_round[s.round] = s.survivors;
    results[*s.next] = objective(*s.next);
  }
  EXPECT_EQ(survivors_by_round[1], 8);
  EXPECT_EQ(survivors_by_round[2], 4);
  EXPECT_EQ(survivors_by_round[3], 2);
  EXPECT_EQ(survivors_by_round[4], 1);
}

TEST(PlanSearch, StopsAtTheEvaluationBudget) {
  std::map<KnobConfig, double> results;
  auto steps = drive(7, &results);
  EXPECT_EQ(results.size(), 7u);
  EXPECT_EQ(steps.back().why_done, "evaluation budget spent");
}

TEST(PlanSearch, ABracketThatConvergedWithBudgetLeftStartsAnotherOnUntriedConfigurations) {
  // A plateau: from 4 initial samples the first bracket finds no gain and converges well before
  // 100 evaluations; the budget the user granted is then spent on fresh samples, never on a
  // configuration evaluated before.
  SearchOptions o;
  o.initial = 4;
  std::map<KnobConfig, double> results;
  auto steps = drive(100, &results, o, [](const KnobConfig&) { return 1.0; });
  EXPECT_LT(
      std::count_if(steps.begin(), steps.end(), [](const SearchStep& s) { return s.bracket == 0; }),
      60);
  int last_bracket = 0;
  for (const SearchStep& s : steps) {
    EXPECT_GE(s.bracket, last_bracket) << "brackets run in order";
    last_bracket = s.bracket;
  }
  EXPECT_GE(last_bracket, 1);
  EXPECT_EQ(results.size(), 100u);
  EXPECT_EQ(steps.back().why_done, "evaluation budget spent");
  // A later bracket's first step is round 0 on a configuration the first bracket never scheduled.
  auto first_of_1 =
      std::find_if(steps.begin(), steps.end(), [](const SearchStep& s) { return s.bracket == 1; });
  ASSERT_NE(first_of_1, steps.end());
  EXPECT_EQ(first_of_1->round, 0);
}

TEST(PlanSearch, StopsWhenEveryConfigurationWasTried) {
  // A grid of 6: more budget than configurations ends with the whole grid evaluated once each.
  const std::vector<int> dims = {3, 2};
  std::map<KnobConfig, double> results;
  SearchStep s;
  for (int i = 0; i < 100; ++i) {
    s = plan_search(dims, {0, 0}, results, 50, {});
    if (!s.next) break;
    ASSERT_FALSE(results.count(*s.next)) << "a configuration was scheduled twice";
    results[*s.next] = -std::abs((*s.next)[0] - 1.0) - (*s.next)[1];
  }
  EXPECT_FALSE(s.next.has_value());
  EXPECT_EQ(results.size(), 6u);
  EXPECT_EQ(s.why_done, "no unexplored configuration is left");
}

TEST(PlanSearch, FailedConfigurationsNeverSurvive) {
  // Everything but the start fails: the search ends without crashing and never prefers a failure.
  std::map<KnobConfig, double> results;
  for (int i = 0; i < 200; ++i) {
    SearchStep s = plan_search(kDims, {1, 1, 0}, results, 30, {});
    if (!s.next) break;
    results[*s.next] = *s.next == KnobConfig{1, 1, 0} ? 1.0 : -INFINITY;
  }
  EXPECT_LE(results.size(), 30u);
}

// --- the policy over a State -----------------------------------------------------------------

State fresh_state(int64_t max_tool_calls) {
  State s;
  s.created = true;
  s.goal.direction = Direction::kMax;
  s.limits.max_tool_calls = max_tool_calls;
  return s;
}

// What the loop would record for one reply: tool calls, an attempt per evaluate. The score of an
// attempt comes from the objective on the configuration written.
void apply_reply(State& s, const json& message, const std::vector<Knob>& knobs) {
  for (const auto& call : message["tool_calls"]) {
    std::string name = call["function"]["name"];
    json args = json::parse(call["function"]["arguments"].get<std::string>());
    s.used.tool_calls += 1;
    s.last_seq += 2;
    s.tool_calls_by_name[name] += 1;
    if (name == "evaluate") {
      auto c = parse_config_text(knobs, args["strategy"]);
      ASSERT_TRUE(c.has_value());
      LedgerEntry l;
      l.kind = LedgerKind::kAttempt;
      l.seq = ++s.last_seq;
      l.text = args["strategy"];
      l.correct = true;
      l.score = objective(*c);
      s.ledger.push_back(l);
    }
    if (name == "finish") s.done = true;
  }
}

json step(SearchPolicy& p, const State& s) {
  PolicyRequest req;
  req.state = &s;
  return p.next(req).message;
}

TEST(SearchPolicyReplies, WritesTheConfigurationThenEvaluatesIt) {
  SearchPolicy p(Files{{"kernel.cc", kKernel}});
  State s = fresh_state(100);
  json m = step(p, s);
  ASSERT_EQ(m["tool_calls"].size(), 2u);
  const json& w = m["tool_calls"][0];
  EXPECT_EQ(w["type"], "function");
  EXPECT_EQ(w["function"]["name"], "write_file");
  json wargs = json::parse(w["function"]["arguments"].get<std::string>());
  EXPECT_EQ(wargs["path"], "kernel.cc");
  EXPECT_EQ(wargs["content"], kKernel);  // the starter's own configuration first
  const json& e = m["tool_calls"][1];
  EXPECT_EQ(e["function"]["name"], "evaluate");
  EXPECT_EQ(json::parse(e["function"]["arguments"].get<std::string>())["strategy"],
            "BM=16 BN=32 U=1");
  EXPECT_NE(w["id"], e["id"]);
}

TEST(SearchPolicyReplies, RunsToFinishAndLeavesTheBestInTheWorkspace) {
  SearchPolicy p(Files{{"kernel.cc", kKernel}});
  State s = fresh_state(80);
  std::string last_written;
  json last;
  for (int i = 0; i < 200 && !s.done; ++i) {
    last = step(p, s);
    for (const auto& c : last["tool_calls"]) {
      if (c["function"]["name"] == "write_file") {
        last_written = json::parse(c["function"]["arguments"].get<std::string>())["content"];
      }
    }
    apply_reply(s, last, p.knobs());
  }
  ASSERT_TRUE(s.done);
  EXPECT_LE(s.used.tool_calls, 80);
  EXPECT_THAT(last["tool_calls"][0]["function"]["arguments"].get<std::string>(),
              HasSubstr("best BM=64 BN=128 U=4 = 10"));
  EXPECT_THAT(last_written, HasSubstr("constexpr int BM = 64;"));
  EXPECT_THAT(last_written, HasSubstr("constexpr int BN = 128;"));
  EXPECT_THAT(last_written, HasSubstr("constexpr int U = 4;"));
}

TEST(SearchPolicyReplies, ProfilesTheBestOnceBeforeFinishingOnAGpuTask) {
  for (bool gpu : {false, true}) {
    SearchPolicy p(Files{{"kernel.cc", kKernel}});
    State s = fresh_state(80);
    s.task = {{"needs_gpu", gpu}};
    std::vector<std::string> names;
    for (int i = 0; i < 200 && !s.done; ++i) {
      json m = step(p, s);
      for (const auto& c : m["tool_calls"]) names.push_back(c["function"]["name"]);
      apply_reply(s, m, p.knobs());
    }
    ASSERT_TRUE(s.done);
    ASSERT_GE(names.size(), 2u);
    EXPECT_EQ(std::count(names.begin(), names.end(), "profile"), gpu ? 1 : 0);
    if (gpu) {
      EXPECT_EQ(names[names.size() - 2], "profile");
    }
    EXPECT_EQ(names.back(), "finish");
  }
}

TEST(SearchPolicyReplies, ResumeWithAFreshPolicyContinuesTheSamePlan) {
  // The uninterrupted run.
  SearchPolicy p(Files{{"kernel.cc", kKernel}});
  State s = fresh_state(60);
  std::vector<json> replies;
  while (!s.done && replies.size() < 100) {
    replies.push_back(step(p, s));
    apply_reply(s, replies.back(), p.knobs());
  }
  // A "crash" before every step: a new policy object each time, only the state carried over.
  State r = fresh_state(60);
  for (size_t i = 0; i < replies.size(); ++i) {
    SearchPolicy fresh(Files{{"kernel.cc", kKernel}});
    json m = step(fresh, r);
    ASSERT_EQ(m, replies[i]) << "diverged at step " << i;
    apply_reply(r, m, fresh.knobs());
  }
}

TEST(SearchPolicyReplies, FailedAttemptsCountAsFailuresForMinGoalsToo) {
  SearchPolicy p(Files{{"kernel.cc", kKernel}});
  State s = fresh_state(100);
  s.goal.direction = Direction::kMin;
  LedgerEntry a;
  a.kind = LedgerKind::kAttempt;
  a.text = "BM=16 BN=32 U=1";
  a.correct = true;
  a.score = 5.0;
  s.ledger.push_back(a);
  LedgerEntry b = a;
  b.text = "BM=8 BN=32 U=1";
  b.score = 3.0;
  s.ledger.push_back(b);
  LedgerEntry c = a;
  c.text = "BM=32 BN=32 U=1";
  c.score = 1.0;
  c.failure = "rule violations";  // never counts, however good its score
  s.ledger.push_back(c);
  auto res = search_results(p.knobs(), s);
  EXPECT_EQ(res.at({1, 1, 0}), -5.0);
  EXPECT_EQ(res.at({0, 1, 0}), -3.0);  // lower is better: the larger value
  EXPECT_TRUE(std::isinf(res.at({2, 1, 0})));
}

TEST(SearchPolicyReplies, EvaluationsThatLeaveNoResultEndTheSearch) {
  SearchPolicy p(Files{{"kernel.cc", kKernel}});
  State s = fresh_state(1000);
  s.tool_calls_by_name["evaluate"] = 5;
  json m = step(p, s);
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "finish");
  EXPECT_THAT(m["content"].get<std::string>(), HasSubstr("left no result"));
}

TEST(SearchPolicyReplies, NoKnobsIsAClearError) {
  try {
    SearchPolicy p(Files{{"kernel.cc", "void f() {}\n"}});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("no `marathon:knob` line"));
  }
}

// Branches of a run explore different regions: the same start, different initial samples.
TEST(MakeSearchPolicy, BranchesSampleDifferentConfigurations) {
  auto first_evaluations = [](int branch) {
    State s = fresh_state(200);
    s.config["task_dir"] =
        (std::filesystem::path(MARATHON_SOURCE_DIR) / "tasks/cpu-matmul").string();
    if (branch >= 0) s.config["branch"] = branch;
    s.task = {
        {"name", "cpu-matmul"},
        {"files",
         {{"starter_dir", "starter"}, {"starter", {"kernel.cc"}}, {"editable", {"kernel.cc"}}}}};
    auto p = make_search_policy(s);
    std::vector<std::string> configs;
    for (int i = 0; i < 40 && configs.size() < 6; ++i) {
      PolicyRequest req;
      req.state = &s;
      json message = p->next(req).message;
      for (const auto& call : message["tool_calls"]) {
        s.used.tool_calls += 1;
        if (call["function"]["name"] != "evaluate") continue;
        std::string text =
            json::parse(call["function"]["arguments"].get<std::string>())["strategy"];
        configs.push_back(text);
        LedgerEntry l;
        l.kind = LedgerKind::kAttempt;
        l.seq = ++s.last_seq;
        l.text = text;
        l.correct = true;
        l.score = 1.0;
        s.ledger.push_back(l);
      }
    }
    return configs;
  };
  std::vector<std::string> b0 = first_evaluations(0), b1 = first_evaluations(1),
                           b2 = first_evaluations(2), plain = first_evaluations(-1);
  ASSERT_EQ(b0.size(), 6u);
  ASSERT_EQ(b1.size(), 6u);
  EXPECT_EQ(b0, plain) << "branch 0 searches as a run without branches does";
  EXPECT_EQ(b0[0], b1[0]) << "every branch starts from the starter's configuration";
  EXPECT_NE(b0, b1);
  EXPECT_NE(b1, b2);
}

TEST(MakeSearchPolicy, ReadsTheCpuMatmulStarterKnobs) {
  State s;
  s.config["task_dir"] = (std::filesystem::path(MARATHON_SOURCE_DIR) / "tasks/cpu-matmul").string();
  s.task = {
      {"name", "cpu-matmul"},
      {"files",
       {{"starter_dir", "starter"}, {"starter", {"kernel.cc"}}, {"editable", {"kernel.cc"}}}}};
  auto p = make_search_policy(s);
  auto* sp = dynamic_cast<SearchPolicy*>(p.get());
  ASSERT_NE(sp, nullptr);
  ASSERT_EQ(sp->knobs().size(), 4u);
  EXPECT_EQ(sp->knobs()[0].name, "BLOCK_I");
  EXPECT_EQ(sp->knobs()[3].name, "UNROLL");
}

}  // namespace
}  // namespace marathon
