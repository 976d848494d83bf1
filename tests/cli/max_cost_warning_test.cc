// `marathon run --max-cost` with a model that has no price: a clear warning on stderr at start (its
// calls count as $0, so the cost budget could never stop the run); a priced model gets none. The
// binary runs against the scripted OpenAI-compatible server on loopback, and a token budget ends
// each run after its first reply.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../loop/loop_test_support.h"
#include "fresh_repo.h"
#include "scripted_llm_server.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;
using ::testing::HasSubstr;
using ::testing::Not;

struct Output {
  int rc = -1;
  std::string out;
  std::string err;
};

// `marathon run TASK --model MODEL --max-cost 1` against `server`, stdout and stderr apart.
Output run_with_cost_budget(const mt::TempDir& tmp, const fs::path& task, const std::string& model,
                            const mt::ScriptedLlmServer& server) {
  const fs::path out = tmp / "out.txt", err = tmp / "err.txt";
  const fs::path run = tmp / "run";
  std::string cmd = "exec " + mt::sh_quote(MARATHON_BINARY);
  for (const std::string& a :
       {std::string("run"), task.string(), std::string("--run-dir"), run.string(),
        std::string("--policy"), std::string("llm"), std::string("--model"), model,
        std::string("--base-url"), server.base_url(), std::string("--max-cost"), std::string("1"),
        std::string("--max-tokens"), std::string("50"), std::string("--quiet")}) {
    cmd += " " + mt::sh_quote(a);
  }
  cmd += " >" + mt::sh_quote(out.string()) + " 2>" + mt::sh_quote(err.string()) + " </dev/null";
  mt::Child c({"/bin/sh", "-c", cmd}, {}, tmp / "sh.log");
  Output o;
  o.rc = c.wait_for(120).value_or(-1);
  o.out = mt::read_text(out);
  o.err = mt::read_text(err);
  return o;
}

mt::ScriptedLlmServer one_reply_server() {
  return mt::ScriptedLlmServer(
      [](size_t, const mt::json&) { return mt::openai_text("thinking", 100, 20); });
}

TEST(MaxCostWarning, AModelWithNoPriceIsNamedOnStderrAtStart) {
  mt::TempDir tmp("max-cost-unpriced");
  mt::ScriptedLlmServer server = one_reply_server();
  Output o = run_with_cost_budget(tmp, mt::tiny_task(), "vllm:scripted", server);
  ASSERT_EQ(o.rc, 0) << o.out << o.err;
  EXPECT_THAT(o.err, HasSubstr("--max-cost 1: model vllm:scripted has no price"));
  EXPECT_THAT(o.err, HasSubstr("the cost budget can never stop this run"));
  EXPECT_THAT(o.err, HasSubstr("[prices] \"vllm:scripted\" = { prompt = USD/Mtok"));
  EXPECT_THAT(o.out, Not(HasSubstr("has no price")));
  // At start: the first thing said, once.
  EXPECT_THAT(o.err.substr(0, o.err.find('\n')), HasSubstr("has no price")) << o.err;
  EXPECT_EQ(o.err.find("has no price"), o.err.rfind("has no price")) << o.err;
  EXPECT_EQ(mt::load_state(tmp / "run").used.cost_usd, 0);
}

TEST(MaxCostWarning, APricedModelGetsNoneWhetherTheTableOrTheTaskPricesIt) {
  {
    mt::TempDir tmp("max-cost-builtin");
    mt::ScriptedLlmServer server = one_reply_server();
    Output o = run_with_cost_budget(tmp, mt::tiny_task(), "openai:gpt-4o", server);
    ASSERT_EQ(o.rc, 0) << o.out << o.err;
    EXPECT_THAT(o.err, Not(HasSubstr("has no price")));
    EXPECT_GT(mt::load_state(tmp / "run").used.cost_usd, 0) << "the built-in table prices it";
  }
  {
    mt::TempDir tmp("max-cost-task");
    const fs::path task = tmp / "task";
    fs::copy(mt::tiny_task(), task, fs::copy_options::recursive);
    std::ofstream(task / "task.toml", std::ios::app)
        << "\n[prices]\n\"vllm:scripted\" = { prompt = 1.0, completion = 2.0 }\n";
    mt::ScriptedLlmServer server = one_reply_server();
    Output o = run_with_cost_budget(tmp, task, "vllm:scripted", server);
    ASSERT_EQ(o.rc, 0) << o.out << o.err;
    EXPECT_THAT(o.err, Not(HasSubstr("has no price")));
    EXPECT_GT(mt::load_state(tmp / "run").used.cost_usd, 0) << "the task's [prices] price it";
  }
}

}  // namespace
}  // namespace marathon
