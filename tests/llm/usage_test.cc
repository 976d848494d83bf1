// Usage a provider reports is untrusted input: what is rejected, what replaces it, and how cache
// reads and writes are priced.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "llm/anthropic_format.h"
#include "llm/openai_format.h"
#include "llm/pricing.h"
#include "llm/provider_registry.h"
#include "llm/usage_check.h"
#include "scripted_llm_server.h"

namespace marathon::llm {
namespace {

using testing::ScriptedLlmServer;
using testing::ScriptedResponse;

int64_t read(const json& usage, const char* key, std::vector<std::string>* problems) {
  return read_usage_count(usage, key, problems);
}

TEST(UsageCheck, NegativeCountIsRejectedNotSubtracted) {
  std::vector<std::string> problems;
  EXPECT_EQ(read(json{{"prompt_tokens", -5000}}, "prompt_tokens", &problems), 0);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("usage.prompt_tokens = -5000: negative"), std::string::npos)
      << problems[0];
}

TEST(UsageCheck, CountsThatWouldOverflowAreRejected) {
  for (const json& v : {json(1e30), json(9223372036854775807LL), json(18446744073709551615ULL),
                        json(kMaxUsageTokensPerCall)}) {
    std::vector<std::string> problems;
    EXPECT_EQ(read(json{{"completion_tokens", v}}, "completion_tokens", &problems), 0) << v;
    ASSERT_EQ(problems.size(), 1u) << v;
    EXPECT_NE(problems[0].find("not below 100000000"), std::string::npos) << problems[0];
  }
}

TEST(UsageCheck, FractionsStringsAndObjectsAreRejected) {
  for (const json& v : {json(12.5), json("120"), json::object(), json(true), json(-0.5)}) {
    std::vector<std::string> problems;
    EXPECT_EQ(read(json{{"prompt_tokens", v}}, "prompt_tokens", &problems), 0) << v;
    EXPECT_EQ(problems.size(), 1u) << v;
  }
}

TEST(UsageCheck, PlausibleCountsPass) {
  std::vector<std::string> problems;
  EXPECT_EQ(read(json{{"prompt_tokens", 1234}}, "prompt_tokens", &problems), 1234);
  EXPECT_EQ(read(json{{"prompt_tokens", 120.0}}, "prompt_tokens", &problems), 120);
  EXPECT_EQ(read(json{{"prompt_tokens", nullptr}}, "prompt_tokens", &problems), 0);
  EXPECT_EQ(read(json::object(), "prompt_tokens", &problems), 0);
  EXPECT_TRUE(problems.empty());
}

json openai_body(json usage) {
  json body = {
      {"choices",
       {{{"message", {{"role", "assistant"}, {"content", "hi"}}}, {"finish_reason", "stop"}}}}};
  if (!usage.is_null()) body["usage"] = std::move(usage);
  return body;
}

TEST(OpenAiFormat, NegativeOrMissingUsageIsFlaggedNotReturned) {
  OpenAiFormat f;
  ParsedReply bad =
      f.parse_reply(openai_body({{"prompt_tokens", -1000000}, {"completion_tokens", 5}}));
  EXPECT_TRUE(bad.malformed.empty());
  ASSERT_FALSE(bad.usage_problems.empty());
  EXPECT_GE(bad.usage.prompt_tokens, 0);
  EXPECT_EQ(bad.usage_reported["prompt_tokens"], -1000000);

  ParsedReply none = f.parse_reply(openai_body(nullptr));
  ASSERT_EQ(none.usage_problems.size(), 1u);
  EXPECT_EQ(none.usage_problems[0], "the reply reports no usage");

  ParsedReply good = f.parse_reply(openai_body({{"prompt_tokens", 10}, {"completion_tokens", 5}}));
  EXPECT_TRUE(good.usage_problems.empty());
  EXPECT_EQ(good.usage.prompt_tokens, 10);
}

json anthropic_body(json usage) {
  return {{"type", "message"},
          {"content", {{{"type", "text"}, {"text", "hi"}}}},
          {"stop_reason", "end_turn"},
          {"usage", std::move(usage)}};
}

TEST(AnthropicFormat, CacheReadsAndWritesAreCountedApart) {
  AnthropicFormat f;
  ParsedReply r = f.parse_reply(anthropic_body({{"input_tokens", 1000},
                                                {"cache_read_input_tokens", 10000},
                                                {"cache_creation_input_tokens", 2000},
                                                {"output_tokens", 500}}));
  ASSERT_TRUE(r.usage_problems.empty());
  EXPECT_EQ(r.usage.prompt_tokens, 13000);
  EXPECT_EQ(r.usage.cache_read_tokens, 10000);
  EXPECT_EQ(r.usage.cache_write_tokens, 2000);
  EXPECT_EQ(r.usage.completion_tokens, 500);
}

TEST(AnthropicFormat, NegativeCacheCountIsFlagged) {
  AnthropicFormat f;
  ParsedReply r = f.parse_reply(anthropic_body(
      {{"input_tokens", 1000}, {"cache_read_input_tokens", -900000}, {"output_tokens", 5}}));
  ASSERT_EQ(r.usage_problems.size(), 1u);
  EXPECT_NE(r.usage_problems[0].find("cache_read_input_tokens"), std::string::npos);
}

TEST(Pricing, AnthropicCacheReadsAndWritesArePricedAtTheirOwnRates) {
  std::optional<Price> p = PriceTable().lookup("claude-sonnet-4-20250514");
  ASSERT_TRUE(p);
  Usage u;
  u.prompt_tokens = 13000;  // 1000 uncached + 10000 read + 2000 written
  u.cache_read_tokens = 10000;
  u.cache_write_tokens = 2000;
  u.completion_tokens = 500;
  const double expected = (1000 * 3.0 + 10000 * 0.30 + 2000 * 3.75 + 500 * 15.0) / 1e6;
  EXPECT_NEAR(cost_usd(u, *p), expected, 1e-12);
}

TEST(Pricing, ConfiguredAnthropicPriceGetsAnthropicCacheRates) {
  Price a = anthropic_cache_rates(Price{10.0, 20.0});
  EXPECT_DOUBLE_EQ(a.cache_read_per_mtok, 1.0);
  EXPECT_DOUBLE_EQ(a.cache_write_per_mtok, 12.5);
}

TEST(Pricing, NegativeCountsAndRatesNeverMakeACostNegative) {
  Usage u;
  u.prompt_tokens = -1000;
  u.completion_tokens = -1000;
  u.cache_read_tokens = -5;
  EXPECT_EQ(cost_usd(u, Price{10.0, 20.0}), 0.0);
  u.prompt_tokens = 1000;
  u.completion_tokens = 1000;
  EXPECT_GE(cost_usd(u, Price{-10.0, -20.0, -1, -1}), 0.0);
  EXPECT_THROW(price_from_json(json{{"input", -1}, {"output", 1}}, "llm.price"),
               std::invalid_argument);
  EXPECT_THROW(PriceTable().merge(json{{"m", {{"input", 1}, {"output", 1}, {"cache_read", -2}}}}),
               std::invalid_argument);
}

struct Server {
  explicit Server(json usage)
      : server([usage](size_t, const json&) {
          ScriptedResponse r = testing::openai_text("fine");
          r.body["usage"] = usage;
          return r;
        }) {}
  ScriptedLlmServer server;
};

ChatResult chat_with(const ScriptedLlmServer& server, ProviderConfig c = {}) {
  c.provider = "openai";
  c.model = "gpt-4o";  // priced: 2.50 / 10.00 per Mtok
  c.base_url = server.base_url();
  c.api_key_env = "MARATHON_TEST_LLM_KEY";
  c.timeout_s = 10;
  std::unique_ptr<Provider> p = make_provider(c);
  ChatRequest r;
  r.model = "gpt-4o";
  r.messages = json::array({{{"role", "user"}, {"content", std::string(4000, 'x')}}});
  return p->chat(r);
}

TEST(HttpProvider, NegativeUsageIsReplacedByTheEstimateAndCostsMoney) {
  Server s(json{{"prompt_tokens", -100000000000LL}, {"completion_tokens", 20}});
  ProviderConfig c;
  c.estimate_usage = [](const ChatRequest&, const json&) {
    Usage u;
    u.prompt_tokens = 1000;
    u.completion_tokens = 100;
    return u;
  };
  ChatResult r = chat_with(s.server, c);
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_TRUE(r.usage_estimated);
  ASSERT_FALSE(r.usage_problems.empty());
  EXPECT_NE(r.usage_problems[0].find("negative"), std::string::npos);
  EXPECT_EQ(r.usage_reported["prompt_tokens"], -100000000000LL);
  EXPECT_EQ(r.usage.prompt_tokens, 1000);
  EXPECT_EQ(r.usage.completion_tokens, 100);
  EXPECT_NEAR(r.cost_usd, (1000 * 2.5 + 100 * 10.0) / 1e6, 1e-12);
}

TEST(HttpProvider, HugeUsageWithoutAnEstimatorFallsBackToTheByteCount) {
  Server s(json{{"prompt_tokens", 1e30}, {"completion_tokens", 20}});
  ChatResult r = chat_with(s.server);
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_TRUE(r.usage_estimated);
  EXPECT_GE(r.usage.prompt_tokens, 1000);  // 4000 bytes of prompt
  EXPECT_LT(r.usage.prompt_tokens, 10000);
  EXPECT_GT(r.cost_usd, 0);
  EXPECT_LT(r.cost_usd, 1);
}

TEST(HttpProvider, RetriesStopAtTheCallsTotalTimeBound) {
  ScriptedLlmServer server([](size_t, const json&) {
    ScriptedResponse r = testing::error_response(503, "overloaded", {{"Retry-After", "0"}});
    r.delay_s = 0.4;
    return r;
  });
  ProviderConfig c;
  c.max_retries = 6;
  c.total_timeout_s = 1.0;
  c.sleep = [](std::chrono::milliseconds) {};
  ChatResult r = chat_with(server, c);
  ASSERT_FALSE(r.ok());
  EXPECT_LE(r.attempts, 3) << "7 attempts of 0.4 s would take 2.8 s against a 1 s bound";
  EXPECT_NE(r.error->message.find("total time bound"), std::string::npos) << r.error->message;
}

TEST(HttpProvider, CancelEndsAHungCallAtOnceAsInterrupted) {
  ScriptedLlmServer server([](size_t, const json&) {
    ScriptedResponse r = testing::openai_text("late");
    r.delay_s = 3600;  // never answers while the test runs
    return r;
  });
  ProviderConfig c;
  c.provider = "openai";
  c.model = "gpt-4o";
  c.base_url = server.base_url();
  c.api_key_env = "MARATHON_TEST_LLM_KEY";
  c.timeout_s = 600;
  std::unique_ptr<Provider> p = make_provider(c);
  std::atomic<bool> stop{false};
  ChatRequest req;
  req.model = "gpt-4o";
  req.messages = json::array({{{"role", "user"}, {"content", "hello"}}});
  req.cancel = [&stop] { return stop.load(); };
  std::thread t([&] {
    while (server.request_count() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  ChatResult r = p->chat(req);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ErrorKind::kInterrupted) << r.error->message;
  EXPECT_EQ(r.attempts, 1);
  EXPECT_LT(s, 5.0) << "a cancelled call must not wait for the 600 s timeout";
}

}  // namespace
}  // namespace marathon::llm

// --- provider prompt caching -------------------------------------------------------------------

namespace marathon::llm {
namespace {

TEST(OpenAiFormat, CachedPromptTokensAreReadAsCacheReads) {
  OpenAiFormat f;
  ParsedReply r =
      f.parse_reply(openai_body({{"prompt_tokens", 30000},
                                 {"completion_tokens", 200},
                                 {"prompt_tokens_details", {{"cached_tokens", 28160}}}}));
  ASSERT_TRUE(r.usage_problems.empty());
  EXPECT_EQ(r.usage.prompt_tokens, 30000);
  EXPECT_EQ(r.usage.cache_read_tokens, 28160);
  EXPECT_EQ(r.usage.cache_write_tokens, 0);
  // More cached than prompt tokens is not believable.
  ParsedReply lie =
      f.parse_reply(openai_body({{"prompt_tokens", 10},
                                 {"completion_tokens", 2},
                                 {"prompt_tokens_details", {{"cached_tokens", 50}}}}));
  ASSERT_EQ(lie.usage_problems.size(), 1u);
  EXPECT_NE(lie.usage_problems[0].find("cached_tokens"), std::string::npos);
}

TEST(Pricing, OpenAiCachedInputIsPricedAtTheCachedRate) {
  std::optional<Price> p = PriceTable().lookup("gpt-4.1-2025-04-14");
  ASSERT_TRUE(p);
  Usage u;
  u.prompt_tokens = 30000;
  u.cache_read_tokens = 28000;
  u.completion_tokens = 100;
  const double expected = (2000 * 2.00 + 28000 * 0.50 + 100 * 8.00) / 1e6;
  EXPECT_NEAR(cost_usd(u, *p), expected, 1e-12);
}

TEST(AnthropicFormat, CacheBreakpointsGoOnTheSystemPromptAndTheMarkedMessagesLastBlocks) {
  AnthropicFormat f;
  ChatRequest req;
  req.model = "claude-sonnet-4";
  req.messages = R"([
    {"role":"system","content":"rules"},
    {"role":"user","content":"task"},
    {"role":"assistant","content":"","tool_calls":[
      {"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"A"},
    {"role":"assistant","content":"","tool_calls":[
      {"id":"c2","type":"function","function":{"name":"read_file","arguments":"{}"}},
      {"id":"c3","type":"function","function":{"name":"grep","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"c2","content":"B"},
    {"role":"tool","tool_call_id":"c3","content":"C"},
    {"role":"user","content":"goal block"}])"_json;
  req.cache_breakpoints = {0, 1, 3, 6};
  json body = f.request_body(req);
  ASSERT_TRUE(body["system"].is_array());
  EXPECT_EQ(body["system"][0]["text"], "rules");
  EXPECT_EQ(body["system"][0]["cache_control"]["type"], "ephemeral");
  const json& m = body["messages"];
  ASSERT_EQ(m.size(), 5u);  // user task, assistant, user result, assistant, user results + goal
  EXPECT_EQ(m[0]["content"][0]["cache_control"]["type"], "ephemeral");  // the task
  EXPECT_EQ(m[2]["content"][0]["cache_control"]["type"], "ephemeral");  // result A
  ASSERT_EQ(m[4]["content"].size(), 3u);
  EXPECT_FALSE(m[4]["content"][0].contains("cache_control"));           // result B
  EXPECT_EQ(m[4]["content"][1]["cache_control"]["type"], "ephemeral");  // result C
  EXPECT_FALSE(m[4]["content"][2].contains("cache_control"));           // the live tail
  int marks = 0;
  for (const json& turn : m) {
    for (const json& b : turn["content"]) marks += b.contains("cache_control") ? 1 : 0;
  }
  EXPECT_EQ(marks, 3);
  // Without breakpoints the request is as before: the system prompt a plain string.
  req.cache_breakpoints.clear();
  json plain = f.request_body(req);
  EXPECT_TRUE(plain["system"].is_string());
  EXPECT_EQ(plain.dump().find("cache_control"), std::string::npos);
}

TEST(AnthropicFormat, AtMostFourBreakpointsTheNewestKept) {
  json canonical = json::array();
  for (int i = 0; i < 8; ++i)
    canonical.push_back(
        {{"role", i % 2 ? "assistant" : "user"}, {"content", "m" + std::to_string(i)}});
  std::string system;
  json out = to_anthropic_messages(canonical, &system, {0, 1, 2, 3, 4, 5, 6, 7});
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i]["content"][0].contains("cache_control"), i >= 4) << i;
  }
}

}  // namespace
}  // namespace marathon::llm
