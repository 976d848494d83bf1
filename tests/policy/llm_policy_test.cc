// LlmPolicy (policy/llm_policy.h) over a real provider against the scripted server on loopback.
#include "policy/llm_policy.h"

#include <gtest/gtest.h>

#include <chrono>

#include "llm/provider_registry.h"
#include "scripted_llm_server.h"

namespace marathon {
namespace {

using testing::ScriptedLlmServer;

const json kTools = R"([
  {"type":"function","function":{"name":"read_file","description":"read",
   "parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}])"_json;

std::unique_ptr<llm::Provider> provider_for(const ScriptedLlmServer& server) {
  llm::ProviderConfig c;
  c.provider = "openai";
  c.model = "gpt-4o-mini";
  c.base_url = server.base_url();
  c.api_key_env = "MARATHON_TEST_LLM_KEY";
  c.max_retries = 3;
  c.timeout_s = 10;
  c.sleep = [](std::chrono::milliseconds) {};
  return llm::make_provider(c);
}

TEST(LlmPolicy, ReplyCarriesUsageCostErrorsAndProblems) {
  ScriptedLlmServer server({testing::openai_tool_calls(json::array(
                                {{{"id", "z"}, {"name", "nope"}, {"arguments", "{}"}}})),
                            testing::error_response(401, "bad key")});
  LlmPolicy policy(provider_for(server));
  PolicyRequest req;
  req.messages = json::array({{{"role", "system"}, {"content", "be brief"}},
                              {{"role", "user"}, {"content", "read a.txt"}}});
  req.tools = kTools;
  PolicyReply ok = policy.next(req);
  EXPECT_EQ(ok.provider, "openai");
  EXPECT_EQ(ok.model, "gpt-4o-mini");
  EXPECT_EQ(ok.prompt_tokens, 100);
  EXPECT_GT(ok.cost_usd, 0);
  EXPECT_FALSE(ok.error.has_value());
  ASSERT_EQ(ok.problems.size(), 1u);
  EXPECT_EQ(ok.problems[0]["kind"], "unknown_tool");
  PolicyReply bad = policy.next(req);
  ASSERT_TRUE(bad.error.has_value());
  EXPECT_EQ(bad.error->kind, LlmErrorKind::kAuth);
}

TEST(OutputTokenLimit, SizedFromTheWindowUnlessFixed) {
  EXPECT_EQ(output_token_limit(8192, 128000, 30000, false), 8192);
  // A 4k window with a 3k prompt leaves 4096 - 3000 - 81 (2% margin).
  EXPECT_EQ(output_token_limit(8192, 4096, 3000, false), 4096 - 3000 - 81);
  EXPECT_EQ(output_token_limit(8192, 4096, 4000, false), kMinOutputTokens);
  EXPECT_EQ(output_token_limit(8192, 4096, 3000, true), 8192);
  EXPECT_EQ(output_token_limit(8192, 0, 3000, false), 8192);
}

}  // namespace
}  // namespace marathon
