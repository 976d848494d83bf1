// The providers' documented wire formats, streamed and not, against scripted servers on 127.0.0.1:
// OpenAI chat completions (string tool arguments, parallel calls, content null, refusals,
// reasoning_content from vLLM/DeepSeek-style servers) and Anthropic messages (tool_use and
// tool_result, thinking blocks sent back, stop_reason values including pause_turn and max_tokens,
// overloaded errors as a status and inside a stream). Each streamed reply must parse to exactly
// what the same reply sent whole parses to.
#include <gtest/gtest.h>

#include <chrono>

#include "llm/anthropic_format.h"
#include "llm/openai_format.h"
#include "llm/provider_registry.h"
#include "llm/sse.h"
#include "scripted_llm_server.h"

namespace marathon::llm {
namespace {

using testing::ScriptedLlmServer;
using testing::ScriptedResponse;

const json kTools = R"([
  {"type":"function","function":{"name":"read_file","description":"read",
   "parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
  {"type":"function","function":{"name":"grep","description":"search",
   "parameters":{"type":"object","properties":{"pattern":{"type":"string"}}}}}])"_json;

std::unique_ptr<Provider> provider(const std::string& name, const ScriptedLlmServer& server,
                                   const std::string& model) {
  ProviderConfig c;
  c.provider = name;
  c.model = model;
  c.base_url = server.base_url();
  c.api_key_env = "MARATHON_TEST_LLM_KEY";
  c.max_retries = 2;
  c.timeout_s = 10;
  c.sleep = [](std::chrono::milliseconds) {};
  return make_provider(c);
}

ChatRequest request(bool stream) {
  ChatRequest r;
  r.model = "m";
  r.messages = json::array({{{"role", "system"}, {"content", "rules"}},
                            {{"role", "user"}, {"content", "read a.txt and grep TODO"}}});
  r.tools = kTools;
  r.stream = stream;
  return r;
}

// An SSE body from (event, data) pairs; an empty event name writes no `event:` line.
std::string sse(const std::vector<std::pair<std::string, json>>& events, bool done_marker) {
  std::string out = ": a comment line the client must skip\n\n";
  for (const auto& [name, data] : events) {
    if (!name.empty()) out += "event: " + name + "\r\n";
    out += "data: " + data.dump() + "\r\n\r\n";
  }
  if (done_marker) out += "data: [DONE]\n\n";
  return out;
}

ScriptedResponse raw(std::string body, int status = 200) {
  ScriptedResponse r;
  r.status = status;
  r.raw_body = std::move(body);
  r.headers["Content-Type"] = "text/event-stream";
  return r;
}

// --- OpenAI --------------------------------------------------------------------------------------

// Two parallel calls, content null, string arguments, reasoning_content: whole.
json openai_whole() {
  return R"({"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls",
    "message":{"role":"assistant","content":null,"reasoning_content":"I should read first.",
      "tool_calls":[
        {"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}},
        {"id":"call_b","type":"function","function":{"name":"grep","arguments":"{\"pattern\":\"TODO\"}"}}]}}],
    "usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,
             "prompt_tokens_details":{"cached_tokens":64}}})"_json;
}

// The same reply as chat.completion.chunk events: arguments in pieces, ids and names once, the
// usage in a last chunk with no choices (stream_options.include_usage).
std::string openai_streamed() {
  auto chunk = [](json delta, json finish = nullptr) {
    return json{{"object", "chat.completion.chunk"},
                {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
  };
  std::vector<std::pair<std::string, json>> ev = {
      {"", chunk({{"role", "assistant"}, {"content", nullptr}})},
      {"", chunk({{"reasoning_content", "I should "}})},
      {"", chunk({{"reasoning_content", "read first."}})},
      {"", chunk({{"tool_calls",
                   {{{"index", 0},
                     {"id", "call_a"},
                     {"type", "function"},
                     {"function", {{"name", "read_file"}, {"arguments", ""}}}}}}})},
      {"", chunk({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "{\"path\":"}}}}}}})},
      {"",
       chunk({{"tool_calls",
               {{{"index", 1},
                 {"id", "call_b"},
                 {"type", "function"},
                 {"function", {{"name", "grep"}, {"arguments", "{\"pattern\":\"TODO\"}"}}}}}}})},
      {"", chunk({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "\"a.txt\"}"}}}}}}})},
      {"", chunk(json::object(), "tool_calls")},
      {"",
       {{"object", "chat.completion.chunk"},
        {"choices", json::array()},
        {"usage",
         {{"prompt_tokens", 120},
          {"completion_tokens", 30},
          {"total_tokens", 150},
          {"prompt_tokens_details", {{"cached_tokens", 64}}}}}}},
  };
  return sse(ev, /*done_marker=*/true);
}

void expect_openai_reply(const ChatResult& r) {
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.message["content"], "");
  ASSERT_EQ(r.message["tool_calls"].size(), 2u);
  EXPECT_EQ(r.message["tool_calls"][0]["id"], "call_a");
  EXPECT_EQ(r.message["tool_calls"][0]["function"]["name"], "read_file");
  EXPECT_EQ(r.message["tool_calls"][0]["function"]["arguments"], "{\"path\":\"a.txt\"}");
  EXPECT_EQ(r.message["tool_calls"][1]["function"]["arguments"], "{\"pattern\":\"TODO\"}");
  EXPECT_EQ(r.message["reasoning_content"], "I should read first.");
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_EQ(r.usage.prompt_tokens, 120);
  EXPECT_EQ(r.usage.completion_tokens, 30);
  EXPECT_EQ(r.usage.cache_read_tokens, 64);
  EXPECT_TRUE(r.problems.empty());
}

TEST(OpenAiConformance, ParallelCallsContentNullAndReasoningWholeAndStreamedAlike) {
  ScriptedResponse whole;
  whole.body = openai_whole();
  ScriptedLlmServer server({whole, raw(openai_streamed())});
  auto p = provider("vllm", server, "m");
  ChatResult a = p->chat(request(false));
  ChatResult b = p->chat(request(true));
  expect_openai_reply(a);
  expect_openai_reply(b);
  EXPECT_EQ(a.message, b.message);
  auto reqs = server.requests();
  EXPECT_FALSE(reqs[0].body.contains("stream"));
  EXPECT_EQ(reqs[1].body["stream"], true);
  EXPECT_EQ(reqs[1].body["stream_options"]["include_usage"], true);
}

TEST(OpenAiConformance, ReasoningIsKeptButNeverSentBackAndEffortReplacesTemperature) {
  ScriptedResponse whole;
  whole.body = openai_whole();
  ScriptedLlmServer server({whole});
  auto p = provider("vllm", server, "m");
  ChatRequest r = request(false);
  r.messages.push_back({{"role", "assistant"},
                        {"content", "x"},
                        {"reasoning_content", "secret chain"},
                        {"refusal", "no"}});
  r.reasoning_effort = "high";
  ASSERT_TRUE(p->chat(r).ok());
  const json body = server.requests()[0].body;
  EXPECT_EQ(body.dump().find("secret chain"), std::string::npos);
  EXPECT_EQ(body["reasoning_effort"], "high");
  EXPECT_FALSE(body.contains("temperature"));
}

TEST(OpenAiConformance, ARefusalIsWhatTheModelSaid) {
  ScriptedResponse whole;
  whole.body = R"({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",
    "content":null,"refusal":"I can't help with that."}}],
    "usage":{"prompt_tokens":10,"completion_tokens":5}})"_json;
  auto chunk = [](json delta, json finish = nullptr) {
    return json{{"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
  };
  std::string streamed = sse({{"", chunk({{"role", "assistant"}, {"refusal", "I can't "}})},
                              {"", chunk({{"refusal", "help with that."}}, "stop")},
                              {"",
                               {{"choices", json::array()},
                                {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}}}},
                             true);
  ScriptedLlmServer server({whole, raw(streamed)});
  auto p = provider("openai", server, "gpt-4o");
  for (bool stream : {false, true}) {
    ChatResult r = p->chat(request(stream));
    ASSERT_TRUE(r.ok()) << stream;
    EXPECT_EQ(r.message["refusal"], "I can't help with that.") << stream;
    EXPECT_EQ(r.message["content"], "(refused) I can't help with that.") << stream;
    EXPECT_FALSE(r.message.contains("tool_calls"));
  }
}

TEST(OpenAiConformance, AStreamCutShortIsRetriedAndAnErrorChunkIsAnError) {
  auto chunk = json{{"choices", {{{"index", 0}, {"delta", {{"content", "par"}}}}}}};
  std::string cut = "data: " + chunk.dump() + "\n\n";  // no finish, no [DONE]: the server died
  std::string error_chunk =
      sse({{"", {{"error", {{"message", "boom"}, {"type", "server_error"}}}}}}, false);
  std::string bad_request =
      sse({{"", {{"error", {{"message", "bad"}, {"type", "invalid"}}}}}}, false);
  ScriptedLlmServer server({raw(cut), raw(error_chunk), raw(openai_streamed()), raw(bad_request)});
  auto p = provider("vllm", server, "m");
  ChatResult r = p->chat(request(true));
  expect_openai_reply(r);
  EXPECT_EQ(r.attempts, 3);
  ChatResult bad = p->chat(request(true));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error->kind, ErrorKind::kBadRequest);
  EXPECT_EQ(bad.attempts, 1);
}

// --- Anthropic -----------------------------------------------------------------------------------

json anthropic_whole(const std::string& stop_reason) {
  json b = R"({"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4",
    "content":[
      {"type":"thinking","thinking":"Read the file, then search.","signature":"sig-abc"},
      {"type":"redacted_thinking","data":"opaque"},
      {"type":"text","text":"Reading."},
      {"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.txt"}},
      {"type":"tool_use","id":"toolu_2","name":"grep","input":{}}],
    "stop_sequence":null,
    "usage":{"input_tokens":50,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200,
             "output_tokens":40}})"_json;
  b["stop_reason"] = stop_reason;
  return b;
}

std::string anthropic_streamed(const std::string& stop_reason) {
  json start = R"({"type":"message_start","message":{"id":"msg_1","type":"message",
    "role":"assistant","model":"claude-sonnet-4","content":[],"stop_reason":null,
    "usage":{"input_tokens":50,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200,
             "output_tokens":1}}})"_json;
  auto block_start = [](int i, json block) {
    return json{{"type", "content_block_start"}, {"index", i}, {"content_block", block}};
  };
  auto delta = [](int i, json d) {
    return json{{"type", "content_block_delta"}, {"index", i}, {"delta", d}};
  };
  auto stop = [](int i) { return json{{"type", "content_block_stop"}, {"index", i}}; };
  std::vector<std::pair<std::string, json>> ev = {
      {"message_start", start},
      {"content_block_start",
       block_start(0, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}})},
      {"content_block_delta",
       delta(0, {{"type", "thinking_delta"}, {"thinking", "Read the file, "}})},
      {"ping", {{"type", "ping"}}},
      {"content_block_delta", delta(0, {{"type", "thinking_delta"}, {"thinking", "then search."}})},
      {"content_block_delta", delta(0, {{"type", "signature_delta"}, {"signature", "sig-abc"}})},
      {"content_block_stop", stop(0)},
      {"content_block_start", block_start(1, {{"type", "redacted_thinking"}, {"data", "opaque"}})},
      {"content_block_stop", stop(1)},
      {"content_block_start", block_start(2, {{"type", "text"}, {"text", ""}})},
      {"content_block_delta", delta(2, {{"type", "text_delta"}, {"text", "Reading."}})},
      {"content_block_stop", stop(2)},
      {"content_block_start", block_start(3, {{"type", "tool_use"},
                                              {"id", "toolu_1"},
                                              {"name", "read_file"},
                                              {"input", json::object()}})},
      {"content_block_delta",
       delta(3, {{"type", "input_json_delta"}, {"partial_json", "{\"path\": "}})},
      {"content_block_delta",
       delta(3, {{"type", "input_json_delta"}, {"partial_json", "\"a.txt\"}"}})},
      {"content_block_stop", stop(3)},
      {"content_block_start",
       block_start(
           4,
           {{"type", "tool_use"}, {"id", "toolu_2"}, {"name", "grep"}, {"input", json::object()}})},
      {"content_block_delta", delta(4, {{"type", "input_json_delta"}, {"partial_json", ""}})},
      {"content_block_stop", stop(4)},
      {"message_delta",
       {{"type", "message_delta"},
        {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", nullptr}}},
        {"usage", {{"output_tokens", 40}}}}},
      {"message_stop", {{"type", "message_stop"}}},
  };
  return sse(ev, false);
}

void expect_anthropic_reply(const ChatResult& r) {
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.message["content"], "Reading.");
  ASSERT_EQ(r.message["tool_calls"].size(), 2u);
  EXPECT_EQ(json::parse(r.message["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"path", "a.txt"}}));
  EXPECT_EQ(r.message["tool_calls"][1]["function"]["arguments"], "{}");
  ASSERT_EQ(r.message["thinking_blocks"].size(), 2u);
  EXPECT_EQ(r.message["thinking_blocks"][0]["thinking"], "Read the file, then search.");
  EXPECT_EQ(r.message["thinking_blocks"][0]["signature"], "sig-abc");
  EXPECT_EQ(r.message["thinking_blocks"][1]["type"], "redacted_thinking");
  EXPECT_EQ(r.usage.prompt_tokens, 1250);
  EXPECT_EQ(r.usage.cache_read_tokens, 1000);
  EXPECT_EQ(r.usage.cache_write_tokens, 200);
  EXPECT_EQ(r.usage.completion_tokens, 40);
}

TEST(AnthropicConformance, ToolUseThinkingAndCacheUsageWholeAndStreamedAlike) {
  ScriptedResponse whole;
  whole.body = anthropic_whole("tool_use");
  ScriptedLlmServer server({whole, raw(anthropic_streamed("tool_use"))});
  auto p = provider("anthropic", server, "claude-sonnet-4");
  ChatRequest req = request(false);
  req.thinking_budget = 2048;
  req.max_tokens = 1024;
  ChatResult a = p->chat(req);
  req.stream = true;
  ChatResult b = p->chat(req);
  expect_anthropic_reply(a);
  expect_anthropic_reply(b);
  EXPECT_EQ(a.message, b.message);
  EXPECT_EQ(a.finish_reason, "tool_calls");
  EXPECT_EQ(b.finish_reason, "tool_calls");
  const json body = server.requests()[1].body;
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["thinking"]["budget_tokens"], 2048);
  EXPECT_GT(body["max_tokens"].get<int64_t>(), 2048) << "max_tokens must exceed the budget";
  EXPECT_FALSE(body.contains("temperature"));
}

TEST(AnthropicConformance, ThinkingBlocksGoBackFirstWithTheirToolUseAndResultsAfter) {
  json assistant = {
      {"role", "assistant"},
      {"content", "Reading."},
      {"thinking_blocks",
       json::array({{{"type", "thinking"}, {"thinking", "t"}, {"signature", "s"}}})},
      {"tool_calls", json::array({{{"id", "toolu_1"},
                                   {"type", "function"},
                                   {"function", {{"name", "read_file"}, {"arguments", "{}"}}}}})}};
  json canonical = json::array({{{"role", "user"}, {"content", "go"}},
                                assistant,
                                {{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "A"}}});
  std::string system;
  json out = to_anthropic_messages(canonical, &system);
  ASSERT_EQ(out.size(), 3u);
  const json& blocks = out[1]["content"];
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0], json({{"type", "thinking"}, {"thinking", "t"}, {"signature", "s"}}));
  EXPECT_EQ(blocks[1]["type"], "text");
  EXPECT_EQ(blocks[2]["type"], "tool_use");
  EXPECT_EQ(out[2]["content"][0]["type"], "tool_result");
  EXPECT_EQ(out[2]["content"][0]["tool_use_id"], "toolu_1");
}

TEST(AnthropicConformance, StopReasonsMapToTheCanonicalWords) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"end_turn", "stop"},     {"stop_sequence", "stop"},    {"tool_use", "tool_calls"},
      {"max_tokens", "length"}, {"pause_turn", "pause_turn"}, {"refusal", "content_filter"}};
  std::vector<ScriptedResponse> script;
  for (const auto& [stop, want] : cases) {
    ScriptedResponse whole;
    whole.body = anthropic_whole(stop);
    script.push_back(whole);
    script.push_back(raw(anthropic_streamed(stop)));
  }
  ScriptedLlmServer server(script);
  auto p = provider("anthropic", server, "claude-sonnet-4");
  for (const auto& [stop, want] : cases) {
    for (bool stream : {false, true}) {
      ChatResult r = p->chat(request(stream));
      ASSERT_TRUE(r.ok()) << stop;
      EXPECT_EQ(r.finish_reason, want) << stop << (stream ? " streamed" : "");
    }
  }
}

TEST(AnthropicConformance, OverloadedIsRetriedAsAStatusAndAsAStreamedErrorEvent) {
  ScriptedResponse overloaded;
  overloaded.status = 529;
  overloaded.body =
      R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"_json;
  std::string streamed_overload =
      sse({{"message_start", R"({"type":"message_start","message":{"id":"m","type":"message",
             "role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}})"_json},
           {"error",
            R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"_json}},
          false);
  ScriptedLlmServer server(
      {overloaded, raw(streamed_overload), raw(anthropic_streamed("tool_use"))});
  auto p = provider("anthropic", server, "claude-sonnet-4");
  ChatResult r = p->chat(request(true));
  expect_anthropic_reply(r);
  EXPECT_EQ(r.attempts, 3);
  // Every attempt exhausted on overload: a transport failure that names the status.
  ScriptedLlmServer busy({overloaded, raw(streamed_overload), overloaded});
  auto q = provider("anthropic", busy, "claude-sonnet-4");
  ChatResult failed = q->chat(request(true));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error->kind, ErrorKind::kTransport);
  EXPECT_EQ(failed.error->http_status, 529);
}

// --- the pieces ----------------------------------------------------------------------------------

TEST(SseReader, EventsSplitAnywhereAcrossChunksComeOutWhole) {
  const std::string text =
      ": keep-alive\r\nevent: a\r\ndata: one\r\ndata: two\r\n\r\ndata: {\"x\":1}\n\nevent: "
      "b\rdata: "
      "z\r\r";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    SseReader r;
    r.feed(text.substr(0, cut));
    r.feed(text.substr(cut));
    std::vector<SseEvent> ev = r.take();
    ASSERT_EQ(ev.size(), 3u) << cut;
    EXPECT_EQ(ev[0].event, "a");
    EXPECT_EQ(ev[0].data, "one\ntwo");
    EXPECT_EQ(ev[1].event, "");
    EXPECT_EQ(ev[1].data, "{\"x\":1}");
    EXPECT_EQ(ev[2].event, "b");
    EXPECT_EQ(ev[2].data, "z");
  }
}

}  // namespace
}  // namespace marathon::llm
