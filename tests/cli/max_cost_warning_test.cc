// `marathon run --max-cost` with a model that has no price: refused at start, saying why (its calls
// would count as $0, so the cost budget could never stop the run) and how to price it; priced by
// --price-in/--price-out it runs, and a priced model gets no word about prices at all. The
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
                            const mt::ScriptedLlmServer& server,
                            const std::vector<std::string>& extra = {},
                            const std::string& run_name = "run") {
  const fs::path out = tmp / "out.txt", err = tmp / "err.txt";
  const fs::path run = tmp / run_name;
  std::string cmd = "exec " + mt::sh_quote(MARATHON_BINARY);
  for (const std::string& a :
       {std::string("run"), task.string(), std::string("--run-dir"), run.string(),
        std::string("--policy"), std::string("llm"), std::string("--model"), model,
        std::string("--base-url"), server.base_url(), std::string("--max-cost"), std::string("1"),
        std::string("--max-tokens"), std::string("50"), std::string("--quiet")}) {
    cmd += " " + mt::sh_quote(a);
  }
  for (const std::string& a : extra) cmd += " " + mt::sh_quote(a);
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

TEST(MaxCostWarning, AModelWithNoPriceIsRefusedAtStartUnlessPricedOnTheCommandLine) {
  mt::TempDir tmp("max-cost-unpriced");
  mt::ScriptedLlmServer server = one_reply_server();
  Output o = run_with_cost_budget(tmp, mt::tiny_task(), "vllm:scripted", server);
  ASSERT_EQ(o.rc, 2) << o.out << o.err;
  EXPECT_THAT(o.err, HasSubstr("--max-cost 1: model vllm:scripted has no price"));
  EXPECT_THAT(o.err, HasSubstr("the cost budget could never stop this run"));
  EXPECT_THAT(o.err, HasSubstr("--price-in USD/Mtok --price-out USD/Mtok"));
  EXPECT_THAT(o.err, HasSubstr("[prices] \"vllm:scripted\" = { prompt = USD/Mtok"));
  EXPECT_THAT(o.out, Not(HasSubstr("has no price")));
  EXPECT_EQ(o.err.find("has no price"), o.err.rfind("has no price")) << o.err;
  EXPECT_EQ(server.request_count(), 0u);
  EXPECT_FALSE(fs::exists(tmp / "run" / "events.db"));

  Output priced = run_with_cost_budget(tmp, mt::tiny_task(), "vllm:scripted", server,
                                       {"--price-in", "1", "--price-out", "2"}, "priced");
  ASSERT_EQ(priced.rc, 0) << priced.out << priced.err;
  EXPECT_THAT(priced.err, Not(HasSubstr("has no price")));
  // 100 prompt tokens at $1 and 20 completion tokens at $2 per Mtok.
  EXPECT_NEAR(mt::load_state(tmp / "priced").used.cost_usd, (100 * 1.0 + 20 * 2.0) / 1e6, 1e-12);
}

TEST(MaxCostWarning, APricedModelGetsNoneWhetherTheTableOrTheTaskPricesIt) {
  {
    mt::TempDir tmp("max-cost-builtin");
    mt::ScriptedLlmServer server = one_reply_server();
    Output o = run_with_cost_budget(tmp, mt::tiny_task(), "openai:gpt-4o", server,
                                    {"--allow-no-key"});  // the scripted server needs none
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
