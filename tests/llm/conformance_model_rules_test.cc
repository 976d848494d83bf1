// What each model takes and what each API defines, as the official SDKs (openai 3.63.0, anthropic
// 2.17.0) spell it, through real HTTP against scripted servers on 127.0.0.1: reasoning models get
// max_completion_tokens and no sampling parameters at any base URL; no temperature goes anywhere
// unless asked for; Anthropic's streamed usage is merged field by field, a null count leaving the
// earlier one; built-in prices are found by exact name or dated snapshot, never by a shorter
// prefix; a paused turn goes back without trailing whitespace; x-should-retry is obeyed; an
// Anthropic base URL works with or without /v1.
#include <gtest/gtest.h>

#include <chrono>

#include "llm/anthropic_format.h"
#include "llm/openai_format.h"
#include "llm/pricing.h"
#include "llm/provider_registry.h"
#include "scripted_llm_server.h"

namespace marathon::llm {
namespace {

using testing::ScriptedLlmServer;
using testing::ScriptedResponse;

const json kTools = R"([{"type":"function","function":{"name":"read_file","description":"read",
   "parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}])"_json;

std::unique_ptr<Provider> provider(const std::string& name, const std::string& base_url,
                                   const std::string& model) {
  ProviderConfig c;
  c.provider = name;
  c.model = model;
  c.base_url = base_url;
  c.api_key_env = "MARATHON_TEST_LLM_KEY";
  c.max_retries = 2;
  c.timeout_s = 10;
  c.sleep = [](std::chrono::milliseconds) {};
  return make_provider(c);
}

ChatRequest request(const std::string& model) {
  ChatRequest r;
  r.model = model;
  r.messages = json::array(
      {{{"role", "system"}, {"content", "rules"}}, {{"role", "user"}, {"content", "read a.txt"}}});
  r.tools = kTools;
  return r;
}

// --- parameters a model rejects ------------------------------------------------------------------

// OpenAI answers 400 "Unsupported value: 'temperature'" and "Unsupported parameter: 'max_tokens'"
// to its reasoning models; the base URL (a proxy, a trailing slash) changes nothing about that.
TEST(ModelRules, OpenAiReasoningModelsGetMaxCompletionTokensAndNoTemperatureAtAnyBaseUrl) {
  for (const std::string& model :
       std::vector<std::string>{"o3", "o4-mini", "gpt-5", "o3-2025-04-16", "gpt-5-mini"}) {
    for (const std::string& effort : std::vector<std::string>{"", "high"}) {
      ScriptedLlmServer server({testing::openai_text("ok"), testing::openai_text("ok")});
      for (const std::string& base :
           std::vector<std::string>{server.base_url(), server.base_url() + "/"}) {
        auto p = provider("openai", base, model);
        ChatRequest r = request(model);
        r.reasoning_effort = effort;
        ASSERT_TRUE(p->chat(r).ok()) << model;
      }
      for (const auto& req : server.requests()) {
        const json& body = req.body;
        EXPECT_FALSE(body.contains("temperature")) << model << " " << body.dump();
        EXPECT_FALSE(body.contains("top_p")) << model;
        EXPECT_FALSE(body.contains("max_tokens")) << model << " " << body.dump();
        EXPECT_EQ(body.value("max_completion_tokens", 0), 4096) << model << " " << body.dump();
        if (effort.empty()) {
          EXPECT_FALSE(body.contains("reasoning_effort")) << model;
        } else {
          EXPECT_EQ(body["reasoning_effort"], effort) << model;
        }
      }
    }
  }
}

// No sampling parameter is sent that was not asked for, to any model of any provider.
TEST(ModelRules, NoTemperatureUnlessAskedForAndThenOnlyWhereTheModelTakesIt) {
  ScriptedLlmServer server([](size_t, const json& req) {
    return req.value("_path", "") == "/v1/messages" ? testing::anthropic_text("ok")
                                                    : testing::openai_text("ok");
  });
  struct Case {
    std::string provider, model;
    std::optional<double> temperature;
    bool sent;
  };
  const std::vector<Case> cases = {
      {"openai", "gpt-4o", std::nullopt, false},
      {"openai", "gpt-4.1", 0.7, true},
      {"openai", "o3", 0.7, false},  // a reasoning model takes none, asked or not
      {"vllm", "Qwen/Qwen3-32B", std::nullopt, false},
      {"vllm", "Qwen/Qwen3-32B", 0.6, true},  // a model not in the table gets what is asked
      {"anthropic", "claude-sonnet-4-5", std::nullopt, false},
      {"anthropic", "claude-haiku-4-5-20251001", std::nullopt, false},
      {"anthropic", "claude-3-5-haiku-20241022", 0.3, true},
  };
  for (const Case& c : cases) {
    auto p = provider(c.provider, server.base_url(), c.model);
    ChatRequest r = request(c.model);
    if (c.temperature) r.temperature = *c.temperature;
    ASSERT_TRUE(p->chat(r).ok()) << c.model;
    const json body = server.requests().back().body;
    EXPECT_EQ(body.contains("temperature"), c.sent)
        << c.provider << ":" << c.model << " " << body.dump();
    if (c.sent) {
      EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), *c.temperature);
    }
  }
}

// --- streamed usage ------------------------------------------------------------------------------

std::string sse(const std::vector<json>& events) {
  std::string out;
  for (const json& e : events) {
    out += "event: " + e["type"].get<std::string>() + "\ndata: " + e.dump() + "\n\n";
  }
  return out;
}

ScriptedResponse raw(std::string body) {
  ScriptedResponse r;
  r.raw_body = std::move(body);
  r.headers["Content-Type"] = "text/event-stream";
  return r;
}

// The events as the anthropic SDK's own models serialise them (RawMessageStartEvent,
// RawMessageDeltaEvent with a MessageDeltaUsage whose optional counts are None): message_delta's
// null counts leave message_start's standing, its output_tokens replaces the start's.
TEST(ModelRules, AnthropicStreamedUsageKeepsStartCountsWhereTheDeltaSaysNull) {
  const std::vector<json> events = {
      R"({"message":{"id":"msg_1","container":null,"content":[],"diagnostics":null,
        "model":"claude-sonnet-4-5","role":"assistant","stop_details":null,"stop_reason":null,
        "stop_sequence":null,"type":"message","usage":{"cache_creation":null,
        "cache_creation_input_tokens":1500,"cache_read_input_tokens":2600,"inference_geo":null,
        "input_tokens":25,"output_tokens":1,"output_tokens_details":null,"server_tool_use":null,
        "service_tier":null,"speed":null}},"type":"message_start"})"_json,
      R"({"content_block":{"citations":null,"text":"","type":"text"},"index":0,
        "type":"content_block_start"})"_json,
      R"({"delta":{"text":"Done.","type":"text_delta"},"index":0,
        "type":"content_block_delta"})"_json,
      R"({"index":0,"type":"content_block_stop"})"_json,
      R"({"delta":{"container":null,"stop_details":null,"stop_reason":"end_turn",
        "stop_sequence":null},"type":"message_delta","usage":{"cache_creation_input_tokens":null,
        "cache_read_input_tokens":null,"input_tokens":null,"output_tokens":110,
        "output_tokens_details":null,"server_tool_use":null}})"_json,
      R"({"type":"message_stop"})"_json,
  };
  ScriptedLlmServer server({raw(sse(events))});
  auto p = provider("anthropic", server.base_url(), "claude-sonnet-4-5");
  ChatRequest r = request("claude-sonnet-4-5");
  r.stream = true;
  ChatResult res = p->chat(r);
  ASSERT_TRUE(res.ok()) << res.error->message;
  EXPECT_FALSE(res.usage_estimated) << (res.usage_problems.empty() ? "" : res.usage_problems[0]);
  EXPECT_EQ(res.usage.prompt_tokens, 4125);
  EXPECT_EQ(res.usage.completion_tokens, 110);
  EXPECT_EQ(res.usage.cache_read_tokens, 2600);
  EXPECT_EQ(res.usage.cache_write_tokens, 1500);
  // $3 / $15 per Mtok, cache reads $0.30, writes $3.75.
  EXPECT_NEAR(res.cost_usd, (25 * 3.0 + 2600 * 0.30 + 1500 * 3.75 + 110 * 15.0) / 1e6, 1e-12);
  EXPECT_EQ(res.message["content"], "Done.");
  EXPECT_EQ(res.finish_reason, "stop");
}

// A later message_delta that does carry a count replaces the earlier one (server tools grow the
// input as the turn goes on).
TEST(ModelRules, AnthropicStreamedUsageCountsThatArePresentOverrideEarlierOnes) {
  const std::vector<json> events = {
      R"({"type":"message_start","message":{"id":"m","type":"message","role":"assistant",
        "content":[],"usage":{"input_tokens":10,"output_tokens":1}}})"_json,
      R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},
        "usage":{"input_tokens":40,"cache_read_input_tokens":null,"output_tokens":7}})"_json,
      R"({"type":"message_stop"})"_json,
  };
  ScriptedLlmServer server({raw(sse(events))});
  auto p = provider("anthropic", server.base_url(), "claude-sonnet-4-5");
  ChatRequest r = request("claude-sonnet-4-5");
  r.stream = true;
  ChatResult res = p->chat(r);
  ASSERT_TRUE(res.ok()) << res.error->message;
  EXPECT_FALSE(res.usage_estimated);
  EXPECT_EQ(res.usage.prompt_tokens, 40);
  EXPECT_EQ(res.usage.completion_tokens, 7);
  EXPECT_EQ(res.usage.cache_read_tokens, 0);
}

// --- prices --------------------------------------------------------------------------------------

TEST(ModelRules, BuiltInPricesAreByExactNameOrSnapshotNeverAShorterPrefix) {
  PriceTable t;
  struct Want {
    std::string model;
    double in, out;
  };
  for (const Want& w : std::vector<Want>{{"gpt-5-pro", 15.0, 120.0},
                                         {"gpt-5-pro-2025-10-06", 15.0, 120.0},
                                         {"o3-pro", 20.0, 80.0},
                                         {"o3-mini", 1.10, 4.40},
                                         {"o3-mini-2025-01-31", 1.10, 4.40},
                                         {"o3", 2.0, 8.0},
                                         {"gpt-4o-2024-05-13", 5.0, 15.0},
                                         {"gpt-4o-2024-08-06", 2.50, 10.0},
                                         {"gpt-4o", 2.50, 10.0},
                                         {"gpt-5", 1.25, 10.0},
                                         {"gpt-5-2025-08-07", 1.25, 10.0},
                                         {"claude-opus-4-5", 5.0, 25.0},
                                         {"claude-opus-4-5-20251101", 5.0, 25.0},
                                         {"claude-opus-4-20250514", 15.0, 75.0},
                                         {"claude-sonnet-4-5-20250929", 3.0, 15.0},
                                         {"claude-haiku-4-5", 1.0, 5.0},
                                         {"anthropic/claude-opus-4-5", 5.0, 25.0}}) {
    std::optional<Price> p = t.lookup(w.model);
    ASSERT_TRUE(p.has_value()) << w.model;
    EXPECT_DOUBLE_EQ(p->input_per_mtok, w.in) << w.model;
    EXPECT_DOUBLE_EQ(p->output_per_mtok, w.out) << w.model;
  }
  // Anthropic's cache rates: reads 0.1x, writes (5 minutes) 1.25x the input rate.
  EXPECT_DOUBLE_EQ(t.lookup("claude-opus-4-5")->cache_read_per_mtok, 0.50);
  EXPECT_DOUBLE_EQ(t.lookup("claude-opus-4-5")->cache_write_per_mtok, 6.25);
  // A model the table does not list gets no price, whatever it starts with.
  for (const std::string& unknown :
       std::vector<std::string>{"gpt-5.2", "gpt-5-turbo", "o3-deep-research", "o4",
                                "claude-opus-4-7", "claude-opus-4-5-foo", "gpt-4o-realtime"}) {
    EXPECT_FALSE(t.lookup(unknown).has_value()) << unknown;
  }
}

// --- a paused turn sent back ---------------------------------------------------------------------

// The Messages API refuses a final assistant turn whose content ends in whitespace (400 "final
// assistant content cannot end with trailing whitespace"); earlier turns keep theirs.
TEST(ModelRules, APausedTurnGoesBackWithoutTrailingWhitespace) {
  ScriptedLlmServer server({testing::anthropic_text("ok"), testing::anthropic_text("ok")});
  auto p = provider("anthropic", server.base_url(), "claude-sonnet-4-5");
  ChatRequest r = request("claude-sonnet-4-5");
  r.messages.push_back({{"role", "assistant"}, {"content", "Earlier words. \n"}});
  r.messages.push_back({{"role", "user"}, {"content", "go on"}});
  r.messages.push_back({{"role", "assistant"}, {"content", "Searching the web for it.\n\n  "}});
  r.cache_breakpoints = {4};
  ASSERT_TRUE(p->chat(r).ok());
  json body = server.requests()[0].body;
  const json& last = body["messages"].back();
  ASSERT_EQ(last["role"], "assistant");
  EXPECT_EQ(last["content"].back()["text"], "Searching the web for it.");
  EXPECT_EQ(last["content"].back()["cache_control"]["type"], "ephemeral");
  EXPECT_EQ(body["messages"][1]["content"][0]["text"], "Earlier words. \n");

  // Nothing but whitespace after the thinking: the blank text goes, the thinking stays.
  ChatRequest t = request("claude-sonnet-4-5");
  t.messages.push_back(
      {{"role", "assistant"},
       {"content", " \n"},
       {"thinking_blocks",
        json::array({{{"type", "thinking"}, {"thinking", "x"}, {"signature", "s"}}})}});
  ASSERT_TRUE(p->chat(t).ok());
  body = server.requests()[1].body;
  const json& blocks = body["messages"].back()["content"];
  ASSERT_EQ(blocks.size(), 1u) << body.dump();
  EXPECT_EQ(blocks[0]["type"], "thinking");
}

// --- retries -------------------------------------------------------------------------------------

ScriptedResponse with_should_retry(int status, const std::string& value) {
  ScriptedResponse r = testing::error_response(status, "scripted");
  r.headers["x-should-retry"] = value;
  return r;
}

// Both SDKs obey x-should-retry over their status rules: "true" retries a 400, "false" stops a 503.
TEST(ModelRules, TheXShouldRetryHeaderIsObeyedOverTheStatus) {
  ScriptedLlmServer server({with_should_retry(400, "true"), testing::openai_text("ok"),
                            with_should_retry(503, "false"), testing::openai_text("unused")});
  auto p = provider("vllm", server.base_url(), "m");
  ChatResult retried = p->chat(request("m"));
  ASSERT_TRUE(retried.ok()) << retried.error->message;
  EXPECT_EQ(retried.attempts, 2);
  ChatResult stopped = p->chat(request("m"));
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.attempts, 1);
  EXPECT_EQ(stopped.error->http_status, 503);
  EXPECT_EQ(server.request_count(), 3u);
}

// --- the Anthropic base URL ----------------------------------------------------------------------

// The SDK's base URL has no /v1 (https://api.anthropic.com); marathon's always had it. Both work.
TEST(ModelRules, AnAnthropicBaseUrlWorksWithAndWithoutV1) {
  ScriptedLlmServer server(
      {testing::anthropic_text("a"), testing::anthropic_text("b"), testing::anthropic_text("c")});
  const std::string with_v1 = server.base_url();
  const std::string root = with_v1.substr(0, with_v1.size() - 3);
  for (const std::string& base : std::vector<std::string>{root, root + "/", with_v1}) {
    auto p = provider("anthropic", base, "claude-sonnet-4-5");
    ChatResult r = p->chat(request("claude-sonnet-4-5"));
    ASSERT_TRUE(r.ok()) << base << ": " << r.error->message;
  }
  for (const auto& req : server.requests()) EXPECT_EQ(req.path, "/v1/messages");
}

}  // namespace
}  // namespace marathon::llm
