// The confirmed best (core/confirmation.h) without I/O: eval.finished and eval.remeasured built in
// memory, folded, and the figures, ties, budget and verdicts checked.
#include "core/confirmation.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/fold.h"
#include "core/state.h"
#include "core/state_json.h"

namespace marathon {
namespace {

std::string num(double v) { return fmt::format("{:.4g}", v); }

class Log {
 public:
  explicit Log(int64_t n = 3, double share = 0.5, int64_t top = 3, int64_t max_tool_calls = 100,
               const std::string& direction = "max", double max_gpu_s = 0) {
    json config = {{"policy", "search"}};
    if (n >= 0) config["confirm"] = {{"n", n}, {"share", share}, {"top", top}};
    json budget = {{"max_tool_calls", max_tool_calls}};
    if (max_gpu_s > 0) budget["max_gpu_s"] = max_gpu_s;
    add(events::RunCreated::kType,
        {{"run_id", "run-1"},
         {"task", {{"name", "noisy"}}},
         {"goal", {{"objective", "larger"}, {"metric", "value"}, {"direction", direction}}},
         {"budget", budget},
         {"config", config}});
  }
  Log& add(const std::string& type, json payload) {
    Event e;
    e.seq = static_cast<int64_t>(events_.size()) + 1;
    e.id = "e" + std::to_string(e.seq);
    e.type = type;
    e.payload = std::move(payload);
    events_.push_back(std::move(e));
    return *this;
  }
  static json result(std::optional<double> score, bool correct, double baseline, json extra) {
    json r = {{"schema_version", 1},
              {"correct", correct},
              {"score", score ? json(*score) : json(nullptr)},
              {"baseline_score", baseline}};
    r.update(extra);
    return r;
  }
  Log& eval(const std::string& cand, double score, bool correct = true, double baseline = 1,
            json extra = json::object()) {
    return add(events::EvalFinished::kType, {{"candidate", cand},
                                             {"cache_key", "key-" + cand},
                                             {"cached", false},
                                             {"status", "ok"},
                                             {"result", result(score, correct, baseline, extra)},
                                             {"elapsed_s", 1.0},
                                             {"gpu_s", 0.0},
                                             {"strategy", "try " + cand}});
  }
  Log& again(const std::string& cand, std::optional<double> score, bool correct = true,
             const std::string& status = "ok", double baseline = 1, double gpu_s = 0,
             json extra = json::object()) {
    State s = fold();
    auto it = s.confirm.candidates.find(cand);
    int64_t index = it == s.confirm.candidates.end() ? 0 : it->second.remeasured;
    return add(events::EvalRemeasured::kType, {{"candidate", cand},
                                               {"cache_key", "key-" + cand},
                                               {"index", index},
                                               {"phase", "best"},
                                               {"seed", 7 + index},
                                               {"status", status},
                                               {"result", result(score, correct, baseline, extra)},
                                               {"elapsed_s", 1.0},
                                               {"gpu_s", gpu_s}});
  }
  State fold() const { return marathon::fold(events_); }

 private:
  std::vector<Event> events_;
};

TEST(Confirmation, TheBestIsTheMedianOfTheReMeasurementsNotTheLuckyFirstDraw) {
  Log log;
  log.eval("a", 2.5);
  State s = log.fold();
  EXPECT_FALSE(s.best_score) << "a first draw that would be the best is not announced";
  ASSERT_EQ(s.confirm.pending, std::vector<std::string>{"a"});
  log.again("a", 1.7).again("a", 2.1);
  EXPECT_FALSE(log.fold().best_score) << "announced only once all three are in";
  s = log.again("a", 1.9).fold();
  ASSERT_TRUE(s.best_score);
  EXPECT_DOUBLE_EQ(*s.best_score, 1.9);
  EXPECT_EQ(s.best_candidate, "a");
  EXPECT_TRUE(s.confirm.pending.empty());
  std::optional<Figure> f = best_figure(s);
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->value, 1.9);
  EXPECT_DOUBLE_EQ(f->first, 2.5);
  EXPECT_DOUBLE_EQ(f->lo, 1.7);
  EXPECT_DOUBLE_EQ(f->hi, 2.1);
  EXPECT_NEAR(f->noise, 0.2, 1e-12);
  EXPECT_EQ(f->samples, 3);
  EXPECT_TRUE(f->confirmed);
  EXPECT_FALSE(f->cut_short);
  EXPECT_EQ(figure_text(*f, num), "1.9 (median of 3 re-measurements, 1.7 to 2.1; first draw 2.5)");
  EXPECT_EQ(s.confirm.remeasured, 3);
}

TEST(Confirmation, AnEvenNumberOfSamplesHasTheMeanOfTheMiddleTwoAsMedian) {
  State s = Log(2).eval("a", 5).again("a", 4).again("a", 4.5).fold();
  ASSERT_TRUE(s.best_score);
  EXPECT_DOUBLE_EQ(*s.best_score, 4.25);
}

TEST(Confirmation, AMinimisingGoalTakesTheMedianToo) {
  State s = Log(3, 0.5, 3, 100, "min")
                .eval("a", 1.0)
                .again("a", 1.4)
                .again("a", 1.2)
                .again("a", 1.3)
                .fold();
  ASSERT_TRUE(s.best_score);
  EXPECT_DOUBLE_EQ(*s.best_score, 1.3);
}

TEST(Confirmation, WithConfirmationOffTheBestMovesAtTheEvaluationAsBefore) {
  for (int64_t n : {-1, 0}) {  // no config.confirm at all (an old log), or n = 0
    State s = Log(n).eval("a", 2.5).eval("b", 2.0).fold();
    ASSERT_TRUE(s.best_score);
    EXPECT_DOUBLE_EQ(*s.best_score, 2.5);
    EXPECT_EQ(s.best_candidate, "a");
    EXPECT_TRUE(s.confirm.pending.empty());
    EXPECT_FALSE(confirmation_due(s));
    EXPECT_FALSE(final_confirmation_due(s));
    EXPECT_FALSE(confirmation_room(s));
  }
}

TEST(Confirmation, TheRunnerOwesTheFirstPendingCandidateItsNextReMeasurement) {
  Log log;
  log.eval("a", 2.5).eval("b", 3.0);
  State s = log.fold();
  EXPECT_EQ(s.confirm.pending, (std::vector<std::string>{"a", "b"}));
  std::optional<RemeasureDue> d = confirmation_due(s);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, (RemeasureDue{"a", "key-a", 0, events::EvalRemeasured::kBest}));
  d = confirmation_due(log.again("a", 1.8).fold());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->candidate, "a");
  EXPECT_EQ(d->index, 1);
  s = log.again("a", 1.9).again("a", 2.0).fold();
  d = confirmation_due(s);
  ASSERT_TRUE(d) << "b's first draw still beats a's median";
  EXPECT_EQ(d->candidate, "b");
  EXPECT_EQ(d->index, 0);
}

TEST(Confirmation, APendingDrawTheNewBestOutdoesIsOwedNothing) {
  State s = Log().eval("a", 2.5).eval("c", 1.8).fold();
  EXPECT_EQ(s.confirm.pending, (std::vector<std::string>{"a", "c"}));
  Log log;
  s = log.eval("a", 2.5).eval("c", 1.8).again("a", 1.9).again("a", 2.0).again("a", 2.1).fold();
  EXPECT_DOUBLE_EQ(*s.best_score, 2.0);
  EXPECT_TRUE(s.confirm.pending.empty()) << "c's 1.8 does not beat 2.0";
  EXPECT_FALSE(confirmation_due(s));
}

TEST(Confirmation, ACandidateWithinNoiseOfTheBestIsATieNotAWin) {
  Log log;
  log.eval("a", 2.5).again("a", 1.7).again("a", 2.1).again("a", 1.9);    // 1.9, noise 0.2
  log.eval("b", 2.3).again("b", 2.0).again("b", 2.05).again("b", 1.95);  // 2.0, noise 0.05
  State s = log.fold();
  EXPECT_EQ(s.best_candidate, "a") << "2.0 is within a's noise of 1.9";
  EXPECT_DOUBLE_EQ(*s.best_score, 1.9);
  std::vector<Figure> ties = ties_with_best(s);
  ASSERT_EQ(ties.size(), 1u);
  EXPECT_EQ(ties[0].candidate, "b");
  EXPECT_DOUBLE_EQ(ties[0].value, 2.0);
  EXPECT_NE(ties_text(s, num).find("tied within noise with candidate b (2 (median of 3"),
            std::string::npos)
      << ties_text(s, num);
  json j = confirmation_json(s);
  ASSERT_EQ(j["ties"].size(), 1u);
  EXPECT_EQ(j["ties"][0]["candidate"], "b");
}

TEST(Confirmation, ACandidateBeyondNoiseOfTheBestBecomesTheBest) {
  Log log;
  log.eval("a", 2.5).again("a", 1.7).again("a", 2.1).again("a", 1.9);
  State s = log.eval("b", 3.0).again("b", 2.5).again("b", 2.6).again("b", 2.4).fold();
  EXPECT_EQ(s.best_candidate, "b");
  EXPECT_DOUBLE_EQ(*s.best_score, 2.5);
  EXPECT_TRUE(ties_with_best(s).empty());
  EXPECT_EQ(s.evals_since_improvement, 0);
}

TEST(Confirmation, BeyondNoiseComparesWithTheLargerNoiseOfTheTwo) {
  Figure a, b;
  a.value = 1.0, a.noise = 0.1;
  b.value = 1.15, b.noise = 0.2;
  EXPECT_FALSE(beyond_noise(a, b));
  EXPECT_FALSE(beyond_noise(b, a));
  b.noise = 0.1;
  EXPECT_TRUE(beyond_noise(a, b));
  b.value = 1.125, a.noise = 0.125;  // exactly the noise apart: not beyond it
  EXPECT_FALSE(beyond_noise(a, b));
}

TEST(Confirmation, TheEvaluatorsOwnConfidenceIntervalWidensTheNoise) {
  json ci = {{"score_ci", {{"low", 1.5}, {"high", 2.5}}}};
  State s =
      Log().eval("a", 2.2, true, 1, ci).again("a", 2.0).again("a", 2.0).again("a", 2.0).fold();
  std::optional<Figure> f = best_figure(s);
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->noise, 0.5) << "the samples agree, the evaluator's interval does not";
}

TEST(Confirmation, AReMeasurementThatIsIncorrectNeverMakesTheCandidateTheBest) {
  Log log;
  log.eval("a", 2.5).again("a", 1.7).again("a", 2.1).again("a", 1.9);
  State s = log.eval("b", 9.0).again("b", 8.0).again("b", std::nullopt, false).fold();
  EXPECT_EQ(s.best_candidate, "a");
  EXPECT_DOUBLE_EQ(*s.best_score, 1.9);
  std::optional<Figure> f = figure_of(s, "b");
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->failed);
  EXPECT_FALSE(f->confirmed);
  EXPECT_TRUE(s.confirm.pending.empty()) << "one incorrect re-measurement settles it";
  EXPECT_FALSE(confirmation_due(s));
  EXPECT_FALSE(final_confirmation_due(s)) << "a failed candidate is not confirmed at the end";
  EXPECT_NE(figure_text(*f, num).find("never the best"), std::string::npos);

  // The only candidate failing leaves the run without a best; a rule violation counts the same.
  s = Log().eval("x", 3).again("x", std::nullopt, false).fold();
  EXPECT_FALSE(s.best_score);
  EXPECT_TRUE(s.best_candidate.empty());
  s = Log()
          .eval("y", 3)
          .again("y", 3, true, "ok", 1, 0, {{"violations", {"timer patched"}}})
          .fold();
  EXPECT_FALSE(s.best_score);
}

TEST(Confirmation, AReMeasurementTheEvaluatorLostGivesNoSampleAndNoVerdict) {
  State s = Log()
                .eval("a", 2.5)
                .again("a", 1.8)
                .again("a", std::nullopt, false, "timeout")
                .again("a", 2.0)
                .fold();
  ASSERT_TRUE(s.best_score);
  EXPECT_DOUBLE_EQ(*s.best_score, 1.9);
  std::optional<Figure> f = best_figure(s);
  EXPECT_EQ(f->samples, 2);
  EXPECT_EQ(f->lost, 1);
  EXPECT_FALSE(f->failed);
  EXPECT_NE(figure_text(*f, num).find("1 re-measurement(s) failed to run"), std::string::npos);
}

TEST(Confirmation, ReMeasurementsTakeAtMostTheirShareOfTheToolCallBudget) {
  // 10 tool calls, share 0.5: five re-measurements in all.
  Log log(3, 0.5, 3, 10);
  log.eval("a", 2.5).again("a", 1.7).again("a", 2.1).again("a", 1.9);
  log.eval("b", 4.0).again("b", 3.0);
  State s = log.fold();
  EXPECT_TRUE(confirmation_room(s));
  ASSERT_TRUE(confirmation_due(s));
  s = log.again("b", 3.2).fold();
  EXPECT_FALSE(confirmation_room(s));
  EXPECT_FALSE(confirmation_due(s));
  EXPECT_EQ(s.best_candidate, "b") << "cut short, announced as it stands";
  EXPECT_DOUBLE_EQ(*s.best_score, 3.1);
  std::optional<Figure> f = best_figure(s);
  EXPECT_TRUE(f->cut_short);
  EXPECT_TRUE(f->confirmed);
  EXPECT_NE(figure_text(*f, num).find("cut short"), std::string::npos);

  // Past the budget a would-be best is announced at its first draw, said to be one.
  s = log.eval("c", 5.0).fold();
  EXPECT_EQ(s.best_candidate, "c");
  EXPECT_DOUBLE_EQ(*s.best_score, 5.0);
  EXPECT_TRUE(s.confirm.pending.empty());
  f = best_figure(s);
  EXPECT_EQ(f->samples, 0);
  EXPECT_NE(figure_text(*f, num).find("not re-measured: the confirmation budget is spent"),
            std::string::npos)
      << figure_text(*f, num);
}

TEST(Confirmation, ReMeasurementsTakeAtMostTheirShareOfTheGpuBudget) {
  Log log(3, 0.5, 3, 100, "max", 100);
  ASSERT_EQ(log.fold().limits.max_gpu_s, 100);
  log.eval("a", 2.5).again("a", 1.7, true, "ok", 1, 30).again("a", 2.1, true, "ok", 1, 25);
  State s = log.fold();
  EXPECT_FALSE(confirmation_room(s)) << "55 s of re-measurements is past half of 100";
  EXPECT_DOUBLE_EQ(*s.best_score, 1.9);
  EXPECT_DOUBLE_EQ(s.confirm.remeasure_gpu_s, 55);
  EXPECT_DOUBLE_EQ(s.used.gpu_s, 55) << "re-measurements count in the GPU budget";
}

TEST(Confirmation, TheFinalConfirmationReMeasuresTheTopCandidatesWithinReachOfTheBest) {
  Log log(3, 0.5, 2);
  log.eval("a", 2.5).again("a", 1.7).again("a", 2.1).again("a", 1.9);  // best 1.9, noise 0.2
  log.eval("b", 1.85);  // not pending (below the best), within noise of it
  log.eval("c", 1.8);   // within noise too, but third
  log.eval("d", 0.5);   // far below
  State s = log.fold();
  EXPECT_FALSE(confirmation_due(s)) << "nothing is owed during the run";
  std::optional<RemeasureDue> d = final_confirmation_due(s);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, (RemeasureDue{"b", "key-b", 0, events::EvalRemeasured::kFinal}));
  log.again("b", 1.8).again("b", 1.9);
  d = final_confirmation_due(log.fold());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->candidate, "b");
  EXPECT_EQ(d->index, 2);
  s = log.again("b", 1.85).fold();
  EXPECT_FALSE(final_confirmation_due(s)) << "top 2: a and b; c is third";
  EXPECT_EQ(s.best_candidate, "a");
  ASSERT_EQ(ties_with_best(s).size(), 1u);

  // Top 3 reaches c; never d.
  Log wide(3, 0.5, 3);
  wide.eval("a", 2.5).again("a", 1.7).again("a", 2.1).again("a", 1.9);
  wide.eval("c", 1.8).eval("d", 0.5);
  d = final_confirmation_due(wide.fold());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->candidate, "c");
  wide.again("c", 1.8).again("c", 1.8).again("c", 1.8);
  EXPECT_FALSE(final_confirmation_due(wide.fold()));
}

TEST(Confirmation, TheFinalConfirmationFinishesAPendingCandidateFirst) {
  Log log;
  log.eval("a", 2.5).again("a", 1.7);
  std::optional<RemeasureDue> d = final_confirmation_due(log.fold());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->candidate, "a");
  EXPECT_EQ(d->phase, events::EvalRemeasured::kBest);
}

TEST(Confirmation, TheSummarySaysPlainlyWhenNoCandidateBeatTheBaselineBeyondNoise) {
  // Baseline 1 reported as 0.95 to 1.05 (noise 0.05); the best 1.02.
  Log log;
  log.eval("a", 1.1)
      .again("a", 1.02, true, "ok", 0.95)
      .again("a", 1.02, true, "ok", 1.05)
      .again("a", 1.02);
  State s = log.fold();
  BaselineComparison c = compare_with_baseline(s);
  EXPECT_EQ(c.verdict, BaselineVerdict::kWithinNoise);
  EXPECT_DOUBLE_EQ(c.baseline_lo, 0.95);
  EXPECT_DOUBLE_EQ(c.baseline_hi, 1.05);
  EXPECT_NE(baseline_text(s, num).find("no candidate beat the baseline beyond noise"),
            std::string::npos)
      << baseline_text(s, num);
  EXPECT_EQ(confirmation_json(s)["baseline"]["verdict"], "within_noise");

  // Worse than the baseline (the init task: best 0.6537 against 0.6137, lower is better).
  s = Log(3, 0.5, 3, 100, "min")
          .eval("w", 0.6537, true, 0.6137)
          .again("w", 0.6537, true, "ok", 0.6137)
          .again("w", 0.6537, true, "ok", 0.6137)
          .again("w", 0.6537, true, "ok", 0.6137)
          .fold();
  EXPECT_EQ(compare_with_baseline(s).verdict, BaselineVerdict::kNotBetter);
  EXPECT_NE(baseline_text(s, num).find("no candidate beat the baseline: the best, 0.6537, is not "
                                       "better than the baseline 0.6137 (lower is better)"),
            std::string::npos)
      << baseline_text(s, num);

  s = Log().eval("a", 2.5).again("a", 1.7).again("a", 2.1).again("a", 1.9).fold();
  EXPECT_EQ(compare_with_baseline(s).verdict, BaselineVerdict::kBeats);
  EXPECT_EQ(baseline_text(s, num), "better than the baseline 1 beyond noise");
  EXPECT_EQ(compare_with_baseline(Log().fold()).verdict, BaselineVerdict::kUnknown);
  EXPECT_EQ(baseline_text(Log().fold(), num), "");
}

TEST(Confirmation, SettingsAreReadFromTheConfigAndAMalformedOneIsOff) {
  EXPECT_EQ(confirm_settings(json{{"confirm", {{"n", 3}, {"share", 0.25}, {"top", 2}}}}),
            (ConfirmSettings{3, 0.25, 2}));
  EXPECT_EQ(confirm_settings(json::object()).n, 0);
  EXPECT_EQ(confirm_settings(json{{"confirm", {{"n", -1}}}}).n, 0);
  EXPECT_EQ(confirm_settings(json{{"confirm", {{"n", "3"}}}}).n, 0);
  EXPECT_EQ(confirm_settings(json{{"confirm", {{"n", 2}, {"share", -1}}}}).share,
            kDefaultConfirmShare);
  EXPECT_EQ(confirm_settings(json{{"confirm", confirm_config({4, 0.3, 1})}}),
            (ConfirmSettings{4, 0.3, 1}));
}

TEST(Confirmation, TheCheckpointCarriesEveryMeasurement) {
  Log log;
  log.eval("a", 2.5, true, 1, {{"score_ci", {{"low", 2.4}, {"high", 2.6}}}})
      .again("a", 1.7)
      .again("a", std::nullopt, false, "timeout")
      .again("a", 1.9)
      .eval("b", 3.0)
      .again("b", 2.8);
  State s = log.fold();
  Confirmations back = confirmations_from_json(to_json(s.confirm));
  EXPECT_EQ(back, s.confirm);
  State round = state_from_json(state_to_json(s));
  EXPECT_EQ(round.confirm, s.confirm);
  EXPECT_EQ(to_json(round), to_json(s));
  EXPECT_THROW(confirmations_from_json(json::array()), std::invalid_argument);
}

}  // namespace
}  // namespace marathon
