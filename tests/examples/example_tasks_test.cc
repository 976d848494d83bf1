// The three example tasks (tasks/flaky-tests, tasks/binary-size, tasks/api-migration) run end to
// end: the real binary, the real evaluator in its sandbox, and a scripted model (the scripted
// OpenAI-compatible server on loopback) that does what an LLM policy would. Each script evaluates
// the starter, makes two real improvements, one edit that breaks the task's check (reported
// incorrect) and one cheat the task forbids (reported as a violation), then finishes. The known
// edits are files under fixtures/.
#include <gtest/gtest.h>

#include "loop/loop_test_support.h"
#include "scripted_llm_server.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::events_of_type;
using testing::load_events;
using testing::load_state;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::TempDir;

json call(const std::string& name, json args) {
  return {{"name", name}, {"arguments", std::move(args)}};
}
json write(const std::string& path, const std::string& content) {
  return call("write_file", {{"path", path}, {"content", content}});
}
json evaluate(const std::string& strategy) { return call("evaluate", {{"strategy", strategy}}); }

fs::path task_dir(const std::string& name) { return testing::source_dir() / "tasks" / name; }
std::string committed(const std::string& task, const std::string& path) {
  return read_text(task_dir(task) / "repo" / path);
}
std::string fixture(const std::string& task, const std::string& file) {
  return read_text(testing::source_dir() / "tests/examples/fixtures" / task / file);
}

// The scripted model: turn i makes the calls of turns[i]; after the last, finish.
struct ScriptedRun {
  std::vector<json> turns;   // each an array of calls
  std::vector<Event> evals;  // eval.finished, in order, once run
  State state;
  std::string log;
};

void run_script(const std::string& task, ScriptedRun& s) {
  TempDir dir("example-" + task);
  std::vector<json> turns = s.turns;
  turns.push_back(json::array({call("finish", {{"summary", "done"}})}));
  ScriptedLlmServer server([turns](size_t, const json& request) {
    size_t turn = ScriptedLlmServer::assistant_turns(request);
    if (turn >= turns.size()) return testing::openai_text("the script has ended");
    return testing::openai_tool_calls(turns[turn]);
  });
  fs::path run = dir / "run";
  int rc = run_binary({"run", task_dir(task).string(), "--run-dir", run.string(), "--policy", "llm",
                       "--model", "vllm:scripted", "--base-url", server.base_url(), "--quiet"},
                      {}, dir / "log", 600);
  s.log = read_text(dir / "log");
  ASSERT_EQ(rc, 0) << s.log;
  s.state = load_state(run);
  s.evals = events_of_type(load_events(run), "eval.finished");
  EXPECT_EQ(s.state.finish_reason, "finish") << s.log;
}

// What one evaluation of the script said.
struct Verdict {
  std::string status;
  bool correct = false;
  std::optional<double> score;
  json violations;
  std::string log;
};

Verdict verdict(const Event& e) {
  Verdict v;
  v.status = e.payload.value("status", "");
  const json& r = e.payload["result"];
  v.correct = r.value("correct", false);
  if (r["score"].is_number()) v.score = r["score"].get<double>();
  v.violations = r.value("violations", json::array());
  v.log = r.value("log", "");
  return v;
}

std::string describe(const std::vector<Event>& evals) {
  std::string s;
  for (const Event& e : evals) s += e.payload["result"].dump() + "\n";
  return s;
}

// The shape every script has: starter, two improvements, a broken check, a cheat.
void expect_the_story(const ScriptedRun& s, const std::string& cheat_words) {
  ASSERT_EQ(s.evals.size(), 5u) << s.log;
  std::vector<Verdict> v;
  for (const Event& e : s.evals) v.push_back(verdict(e));
  const std::string all = describe(s.evals);
  for (const Verdict& x : v) EXPECT_EQ(x.status, "ok") << all;
  for (int i : {0, 1, 2}) {
    EXPECT_TRUE(v[i].correct) << i << ": " << all;
    EXPECT_TRUE(v[i].violations.empty()) << i << ": " << all;
    ASSERT_TRUE(v[i].score) << i << ": " << all;
  }
  EXPECT_LT(*v[1].score, *v[0].score) << "the first improvement scores better\n" << all;
  EXPECT_LT(*v[2].score, *v[1].score) << "the second improvement scores better\n" << all;
  EXPECT_FALSE(v[3].correct) << all;
  EXPECT_TRUE(v[3].violations.empty()) << "a broken check is incorrect, not a violation\n" << all;
  EXPECT_FALSE(v[4].correct) << all;
  ASSERT_FALSE(v[4].violations.empty()) << "the cheat is a violation\n" << all;
  EXPECT_NE(v[4].violations.dump().find(cheat_words), std::string::npos) << all;
  ASSERT_TRUE(s.state.best_score) << all;
  EXPECT_EQ(*s.state.best_score, *v[2].score);
  EXPECT_EQ(s.state.best_candidate, s.evals[2].payload["candidate"]);
}

TEST(ExampleTasks, FlakyTestsFixedOneCauseAtATimeWhileDeletingATestIsAViolation) {
  ScriptedRun s;
  s.turns = {
      json::array({evaluate("the starter")}),
      json::array({write("inventory/counter.py", fixture("flaky-tests", "counter-locked.py")),
                   write("inventory/limiter.py", fixture("flaky-tests", "limiter-sliding.py")),
                   evaluate("a lock around the read-modify-write; a sliding-window limiter")}),
      json::array({write("tests/test_units.py", fixture("flaky-tests", "test_units-reset.py")),
                   evaluate("the unit test resets the module-wide default first")}),
      json::array({write("inventory/units.py", committed("flaky-tests", "inventory/units.py") +
                                                   "import inventory.nothing_here\n"),
                   evaluate("a broken import")}),
      json::array(
          {write("inventory/units.py", committed("flaky-tests", "inventory/units.py")),
           write("tests/test_limiter.py", fixture("flaky-tests", "test_limiter-deleted.py")),
           evaluate("drop the timing test")}),
  };
  run_script("flaky-tests", s);
  expect_the_story(s, "test_the_call_over_the_limit_is_refused was deleted");
  EXPECT_EQ(*s.state.best_score, 0) << "all three causes fixed: no run fails";
  EXPECT_GT(*verdict(s.evals[0]).score, 0.3) << "the starter fails more than the order alone";
  EXPECT_NE(verdict(s.evals[3]).log.find("nothing_here"), std::string::npos);
}

TEST(ExampleTasks, BinarySizeShrinksWithFlagsWhileEditingTheMeasuringScriptIsAViolation) {
  ScriptedRun s;
  s.turns = {
      json::array({evaluate("the starter")}),
      json::array({write("compile_flags.txt", "-Os\n"), evaluate("optimise for size")}),
      json::array({write("compile_flags.txt",
                         "-Os -ffunction-sections -fdata-sections -Wl,--gc-sections\n"),
                   evaluate("drop unused sections")}),
      json::array({write("src/wordfreq.cc", fixture("binary-size", "wordfreq-ascending.cc")),
                   evaluate("a different order")}),
      json::array({write("src/wordfreq.cc", committed("binary-size", "src/wordfreq.cc")),
                   write("measure_size.sh", "#!/bin/sh\necho 1000\n"),
                   evaluate("a shorter measurement")}),
  };
  run_script("binary-size", s);
  expect_the_story(s, "measure_size.sh: a protected file was changed");
  EXPECT_NE(verdict(s.evals[3]).log.find("golden tests passed"), std::string::npos)
      << verdict(s.evals[3]).log;
}

TEST(ExampleTasks, ApiMigrationCountsDownWhileCommentingOutCallsIsAViolation) {
  ScriptedRun s;
  s.turns = {
      json::array({evaluate("the starter")}),
      json::array({write("shop/shipping.py", fixture("api-migration", "shipping.py")),
                   evaluate("shipping migrated")}),
      json::array({write("shop/promotions.py", fixture("api-migration", "promotions.py")),
                   evaluate("promotions migrated")}),
      json::array({write("shop/invoice.py", fixture("api-migration", "invoice-positional.py")),
                   evaluate("invoice migrated, currency by position")}),
      json::array({write("shop/invoice.py", committed("api-migration", "shop/invoice.py")),
                   write("shop/cart.py", fixture("api-migration", "cart-by-hand.py")),
                   evaluate("cart priced by hand")}),
  };
  run_script("api-migration", s);
  expect_the_story(s, "shop/cart.py: 20 of its 22 uses");
  std::vector<double> scores;
  for (int i : {0, 1, 2}) scores.push_back(*verdict(s.evals[i]).score);
  EXPECT_EQ(scores, (std::vector<double>{120, 106, 84}));
  EXPECT_NE(verdict(s.evals[3]).log.find("TypeError"), std::string::npos)
      << verdict(s.evals[3]).log;
}

}  // namespace
}  // namespace marathon
