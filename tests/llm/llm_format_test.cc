// Pure parts of the LLM layer: retry timing, wire formats, reply checks, prices, the registry.
#include <gtest/gtest.h>

#include "llm/anthropic_format.h"
#include "llm/http_errors.h"
#include "llm/openai_format.h"
#include "llm/pricing.h"
#include "llm/provider_registry.h"
#include "llm/reply_check.h"
#include "llm/retry.h"

namespace marathon::llm {
namespace {

TEST(Retry, RetryAfterSecondsMillisecondsAndHttpDate) {
  EXPECT_EQ(retry_after_s({{"retry-after", "7"}}, 0), 7.0);
  EXPECT_EQ(retry_after_s({{"retry-after-ms", "1500"}}, 0), 1.5);
  // Wed, 21 Oct 2015 07:28:00 GMT is 1445412480; ten seconds earlier it asks for 10 s.
  EXPECT_EQ(retry_after_s({{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}, 1445412470), 10.0);
  EXPECT_FALSE(retry_after_s({{"retry-after", "soon"}}, 0).has_value());
  EXPECT_FALSE(retry_after_s({}, 0).has_value());
}

TEST(Retry, BackoffDoublesIsCappedAndJittered) {
  EXPECT_DOUBLE_EQ(backoff_s(0, 1, 60, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(backoff_s(0, 1, 60, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(backoff_s(3, 1, 60, 1.0), 8.0);
  EXPECT_DOUBLE_EQ(backoff_s(20, 1, 60, 1.0), 60.0);
  EXPECT_DOUBLE_EQ(backoff_s(20, 1, 60, 0.0), 30.0);
}

TEST(Retry, ServerRetryAfterWinsOverBackoffButIsClamped) {
  EXPECT_DOUBLE_EQ(retry_delay_s(0, {{"retry-after", "3"}}, 0, 1, 60, 300, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(retry_delay_s(0, {{"retry-after", "9999"}}, 0, 1, 60, 300, 0.5), 300.0);
  EXPECT_TRUE(is_retryable_status(429));
  EXPECT_TRUE(is_retryable_status(529));
  EXPECT_FALSE(is_retryable_status(400));
  EXPECT_FALSE(is_retryable_status(401));
}

TEST(HttpErrors, ContextLengthWordingIsItsOwnKind) {
  std::string body =
      R"({"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}})";
  auto e = classify_http_error(400, body, "openai http://x", "OPENAI_API_KEY", true);
  EXPECT_EQ(e.kind, ErrorKind::kContextLength);
  EXPECT_NE(e.message.find("maximum context length"), std::string::npos);
  auto anthropic = classify_http_error(
      400,
      R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}})",
      "anthropic", "ANTHROPIC_API_KEY", true);
  EXPECT_EQ(anthropic.kind, ErrorKind::kContextLength);
  auto other = classify_http_error(400, R"({"error":{"message":"temperature must be <= 2"}})", "x",
                                   "K", true);
  EXPECT_EQ(other.kind, ErrorKind::kBadRequest);
}

TEST(HttpErrors, AuthErrorNamesTheVariableButNeverAKey) {
  auto e = classify_http_error(401, R"({"error":{"message":"Incorrect API key"}})", "openai url",
                               "MY_KEY_VAR", false);
  EXPECT_EQ(e.kind, ErrorKind::kAuth);
  EXPECT_NE(e.message.find("env MY_KEY_VAR is not set"), std::string::npos) << e.message;
  EXPECT_EQ(classify_http_error(403, "{}", "w", "K", true).kind, ErrorKind::kAuth);
  EXPECT_EQ(classify_http_error(404, "{}", "w", "K", true).kind, ErrorKind::kNotFound);
}

TEST(OpenAiFormat, ArgumentsAsObjectMissingIdsAndContentPartsAreNormalised) {
  json body = R"({"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},
      {"type":"text","text":"b"}],"tool_calls":[{"function":{"name":"read_file",
      "arguments":{"path":"x"}}}]},"finish_reason":"tool_calls"}],
      "usage":{"prompt_tokens":11,"completion_tokens":3}})"_json;
  ParsedReply r = OpenAiFormat().parse_reply(body);
  ASSERT_TRUE(r.malformed.empty()) << r.malformed;
  EXPECT_EQ(r.message["content"], "ab");
  EXPECT_EQ(r.message["tool_calls"][0]["id"], "call_0");
  EXPECT_EQ(r.message["tool_calls"][0]["function"]["arguments"], R"({"path":"x"})");
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_EQ(r.usage.prompt_tokens, 11);
  EXPECT_EQ(r.usage.completion_tokens, 3);
}

TEST(OpenAiFormat, ReplyWithoutChoicesIsMalformedNotACrash) {
  EXPECT_NE(OpenAiFormat().parse_reply(json::array()).malformed, "");
  EXPECT_NE(OpenAiFormat().parse_reply(json{{"choices", json::array()}}).malformed, "");
  EXPECT_NE(OpenAiFormat().parse_reply(json{{"choices", {{{"text", "x"}}}}}).malformed, "");
  EXPECT_NE(OpenAiFormat().parse_reply(json{{"choices", {1}}}).malformed, "");
}

TEST(OpenAiFormat, RequestCarriesToolsAndTheRightTokenLimitField) {
  ChatRequest req{"m", json::array({{{"role", "user"}, {"content", "hi"}}}),
                  json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}}), 77, 0.1};
  json local = OpenAiFormat(false).request_body(req);
  EXPECT_EQ(local["max_tokens"], 77);
  EXPECT_EQ(local["tools"][0]["function"]["name"], "f");
  json official = OpenAiFormat(true).request_body(req);
  EXPECT_EQ(official["max_completion_tokens"], 77);
  EXPECT_FALSE(official.contains("max_tokens"));
}

TEST(AnthropicFormat, CanonicalConversationTranslatesToBlocks) {
  json canonical = R"([
    {"role":"system","content":"rules"},
    {"role":"system","content":"goal"},
    {"role":"user","content":"start"},
    {"role":"assistant","content":"looking","tool_calls":[
      {"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}},
      {"id":"c2","type":"function","function":{"name":"grep","arguments":"not json"}}]},
    {"role":"tool","tool_call_id":"c1","content":"A"},
    {"role":"tool","tool_call_id":"c2","content":"B"},
    {"role":"user","content":"more"}])"_json;
  std::string system;
  json out = to_anthropic_messages(canonical, &system);
  EXPECT_EQ(system, "rules\n\ngoal");
  ASSERT_EQ(out.size(), 3u);  // user, assistant, user (tool results + "more" merged)
  EXPECT_EQ(out[1]["role"], "assistant");
  EXPECT_EQ(out[1]["content"][1]["type"], "tool_use");
  EXPECT_EQ(out[1]["content"][1]["input"]["path"], "a");
  EXPECT_EQ(out[1]["content"][2]["input"]["_unparsed_arguments"], "not json");
  EXPECT_EQ(out[2]["content"][0]["type"], "tool_result");
  EXPECT_EQ(out[2]["content"][0]["tool_use_id"], "c1");
  EXPECT_EQ(out[2]["content"][1]["tool_use_id"], "c2");
  EXPECT_EQ(out[2]["content"][2]["text"], "more");
}

TEST(AnthropicFormat, AssistantMessageRoundTripsThroughBlocks) {
  json assistant = R"({"role":"assistant","content":"plan","tool_calls":[
      {"id":"t1","type":"function","function":{"name":"write_file",
       "arguments":"{\"content\":\"x\",\"path\":\"k.cc\"}"}}]})"_json;
  json blocks = to_anthropic_messages(json::array({assistant}), nullptr)[0]["content"];
  json back = assistant_from_anthropic(blocks);
  EXPECT_EQ(back, assistant);
}

TEST(AnthropicFormat, ReplyStopReasonsAndUsageIncludingCache) {
  json body = R"({"type":"message","content":[{"type":"text","text":"ok"}],
      "stop_reason":"max_tokens","usage":{"input_tokens":10,"cache_read_input_tokens":5,
      "output_tokens":2}})"_json;
  ParsedReply r = AnthropicFormat().parse_reply(body);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.usage.prompt_tokens, 15);
  EXPECT_EQ(r.usage.completion_tokens, 2);
  EXPECT_NE(AnthropicFormat().parse_reply(json{{"type", "error"}}).malformed, "");
}

TEST(AnthropicFormat, ToolsBecomeInputSchemas) {
  json tools = R"([{"type":"function","function":{"name":"f","description":"d",
      "parameters":{"type":"object","properties":{}}}}])"_json;
  json t = to_anthropic_tools(tools);
  EXPECT_EQ(t[0]["name"], "f");
  EXPECT_EQ(t[0]["input_schema"]["type"], "object");
}

// A reply's members of the wrong type are defaulted, never thrown (json::value throws for them):
// tests/fuzz/corpus/llm_reply/regression-anthropic-*.json.
TEST(AnthropicFormat, ReplyMembersOfTheWrongTypeAreDefaultedNotThrown) {
  ParsedReply r;
  ASSERT_NO_THROW(r = AnthropicFormat().parse_reply(R"({"type":5,"content":[{"type":7},
      {"type":"tool_use","id":5,"name":["read_file"],"input":{}},
      {"type":"tool_use","id":"","name":"grep"}]})"_json));
  EXPECT_EQ(r.malformed, "");
  ASSERT_EQ(r.message["tool_calls"].size(), 2u);
  EXPECT_EQ(r.message["tool_calls"][0]["id"], "toolu_0");
  EXPECT_EQ(r.message["tool_calls"][0]["function"]["name"], "");
  EXPECT_EQ(r.message["tool_calls"][1]["id"], "toolu_1");
  EXPECT_EQ(r.message["tool_calls"][1]["function"]["name"], "grep");
}

// json::parse throws out_of_range, not parse_error, for a number no double holds; chat() must not
// throw (tests/fuzz/corpus/tool_args/regression-number-overflow.json, the same parse).
TEST(ReplyCheck, ArgumentsWithANumberOutOfRangeAreBadArgumentsNotAThrow) {
  json tools = json::array({{{"type", "function"}, {"function", {{"name", "read_file"}}}}});
  json message = R"({"role":"assistant","content":"","tool_calls":[
      {"id":"a","function":{"name":"read_file","arguments":"{\"end_line\": -1e999}"}}]})"_json;
  auto p = check_tool_calls(message, tools);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, "bad_arguments");
  EXPECT_NE(p[0].message.find("not valid JSON"), std::string::npos) << p[0].message;
}

TEST(ReplyCheck, UnparsableArgumentsUnknownToolAndMissingNameAreFlagged) {
  json tools = json::array({{{"type", "function"}, {"function", {{"name", "read_file"}}}},
                            {{"type", "function"}, {"function", {{"name", "grep"}}}}});
  json message = R"({"role":"assistant","content":"","tool_calls":[
      {"id":"a","function":{"name":"read_file","arguments":"{\"path\": "}},
      {"id":"b","function":{"name":"rm_rf","arguments":"{}"}},
      {"id":"c","function":{"name":"","arguments":"{}"}},
      {"id":"d","function":{"name":"grep","arguments":"[1]"}},
      {"id":"e","function":{"name":"grep","arguments":""}}]})"_json;
  auto p = check_tool_calls(message, tools);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].kind, "bad_arguments");
  EXPECT_EQ(p[0].tool_call_id, "a");
  EXPECT_EQ(p[1].kind, "unknown_tool");
  EXPECT_NE(p[1].message.find("valid tools: grep, read_file"), std::string::npos) << p[1].message;
  EXPECT_EQ(p[2].kind, "missing_name");
  EXPECT_EQ(p[3].kind, "bad_arguments");
}

TEST(Pricing, LongestPrefixWinsAndConfigOverrides) {
  PriceTable t;
  EXPECT_DOUBLE_EQ(t.lookup("gpt-4o-mini-2024-07-18")->input_per_mtok, 0.15);
  EXPECT_DOUBLE_EQ(t.lookup("gpt-4o-2024-08-06")->input_per_mtok, 2.50);
  EXPECT_DOUBLE_EQ(t.lookup("anthropic/claude-sonnet-4")->output_per_mtok, 15.0);
  EXPECT_FALSE(t.lookup("qwen2.5-coder").has_value());
  t.merge(json{{"qwen2.5", {{"input", 0.1}, {"output", 0.2}}}});
  EXPECT_DOUBLE_EQ(t.lookup("qwen2.5-coder")->output_per_mtok, 0.2);
  EXPECT_THROW(t.merge(json{{"bad", {{"input", "cheap"}}}}), std::invalid_argument);
  EXPECT_DOUBLE_EQ(cost_usd({1'000'000, 500'000}, {2.0, 8.0}), 6.0);
}

TEST(Registry, ModelSpecSplitsAtFirstColonAndUnknownProviderListsValidNames) {
  ModelSpec m = parse_model_spec("ollama:llama3:8b");
  EXPECT_EQ(m.provider, "ollama");
  EXPECT_EQ(m.model, "llama3:8b");
  try {
    parse_model_spec("gemeni:pro");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("anthropic, llamacpp, ollama, openai"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_model_spec("gpt-4o"), std::invalid_argument);
  ProviderConfig c;
  c.provider = "nope";
  c.model = "m";
  EXPECT_THROW(make_provider(c), std::invalid_argument);
  c.provider = "openai";
  c.model = "";
  EXPECT_THROW(make_provider(c), std::invalid_argument);
}

TEST(Registry, ConfigTableIsReadAndBadKeysAreNamed) {
  ProviderConfig c =
      provider_config_from_json(json{{"model", "anthropic:claude-sonnet-4"},
                                     {"timeout_s", 30},
                                     {"max_retries", 2},
                                     {"prices", {{"claude", {{"input", 1}, {"output", 2}}}}}});
  EXPECT_EQ(c.provider, "anthropic");
  EXPECT_EQ(c.model, "claude-sonnet-4");
  EXPECT_EQ(c.timeout_s, 30);
  EXPECT_EQ(c.max_retries, 2);
  EXPECT_EQ(c.prices.at("claude").output_per_mtok, 2);
  try {
    provider_config_from_json(json{{"timeout_s", "soon"}});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "llm.timeout_s: expected a positive number of seconds");
  }
  EXPECT_THROW(provider_config_from_json(json{{"prices", {{"m", {{"input", 1}}}}}}),
               std::invalid_argument);
}

}  // namespace
}  // namespace marathon::llm
