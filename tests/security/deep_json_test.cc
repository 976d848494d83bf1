// JSON from outside nested 200,000 levels deep (400 KB, far below every size limit) or holding a
// number no double holds (1e400): the real `marathon` binary against a scripted model server on
// 127.0.0.1, and `marathon serve --stdio` and `marathon mcp` fed such lines. The reply is a logged
// malformed reply and the run goes on (a resume never asks for it again); a line is a -32700 parse
// error and the server answers the next request. Never a crash. And no source file reads outside
// bytes with json::parse: every one goes through read_outside_json (core/json_reader.h).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "control/stdio_child.h"
#include "core/event_store.h"
#include "core/json_reader.h"
#include "eval/evaluator.h"
#include "goal/task_spec.h"
#include "llm/anthropic_format.h"
#include "llm/openai_format.h"
#include "llm/reply_check.h"
#include "llm/sse.h"
#include "loop/loop_test_support.h"
#include "loop/run_setup.h"
#include "scripted_llm_server.h"
#include "tools/tool_registry.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::events_of_type;
using testing::load_events;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::ScriptedResponse;
using testing::StdioChild;
using testing::TempDir;

constexpr size_t kLevels = 200000;

// 200,000 arrays, each the only element of the one around it: 400 KB.
std::string deep(size_t levels = kLevels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

// 200,000 objects, each the value of the only member of the one around it.
std::string deep_objects(size_t levels = kLevels) {
  std::string s;
  for (size_t i = 0; i < levels; ++i) s += "{\"a\":";
  return s + "1" + std::string(levels, '}');
}

const std::map<std::string, std::string> kEnv{{"OPENAI_API_KEY", "scripted-test-key"},
                                              {"ANTHROPIC_API_KEY", "scripted-test-key"}};

json call(const std::string& name, json args) {
  return {{"name", name}, {"arguments", std::move(args)}};
}

ScriptedResponse finish_openai() {
  return testing::openai_tool_calls(json::array({call("finish", {{"summary", "done"}})}));
}

ScriptedResponse raw(std::string body) {
  ScriptedResponse r;
  r.raw_body = std::move(body);
  return r;
}

// An OpenAI chat completion whose message is `message` (JSON text).
ScriptedResponse openai_message(const std::string& message) {
  return raw(
      R"({"id":"chatcmpl-deep","object":"chat.completion","choices":[{"index":0,"message":)" +
      message +
      R"(,"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":20,)"
      R"("total_tokens":120}})");
}

std::vector<std::string> run_args(const fs::path& run, const std::string& model,
                                  const std::string& url, std::vector<std::string> extra = {}) {
  std::vector<std::string> a{"run",        testing::tiny_task().string(),
                             "--run-dir",  run.string(),
                             "--policy",   "llm",
                             "--model",    model,
                             "--base-url", url,
                             "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The responses logged with an error of kind `kind`.
std::vector<Event> responses_with_error(const std::vector<Event>& events, const std::string& kind) {
  std::vector<Event> out;
  for (const Event& e : events_of_type(events, events::ModelResponse::kType)) {
    auto err = e.payload.find("error");
    if (err != e.payload.end() && err->is_object() && err->value("kind", "") == kind) {
      out.push_back(e);
    }
  }
  return out;
}

std::string error_message(const Event& response) {
  return response.payload["error"].value("message", "");
}

// --- the one reader ---------------------------------------------------------------------------

TEST(DeepJsonReader, RefusesNestingPastTheBoundWhileReading) {
  for (const std::string& text :
       {deep(), "{\"a\":" + deep() + "}", deep(257), deep_objects(), std::string(kLevels, '['),
        std::string(kLevels, '{') + "}", "[" + std::string(kLevels, '{')}) {
    OutsideJson r = read_outside_json(text);
    EXPECT_FALSE(r.ok()) << text.substr(0, 40);
    EXPECT_TRUE(r.value.is_discarded());
    EXPECT_LT(r.error.size(), 500u) << r.error.substr(0, 600);
  }
  OutsideJson r = read_outside_json(deep());
  EXPECT_NE(r.error.find("nested deeper than 256 levels"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("at byte 256"), std::string::npos) << r.error;

  OutsideJson at_bound = read_outside_json(deep(256));
  ASSERT_TRUE(at_bound.ok()) << at_bound.error;
  EXPECT_EQ(at_bound.value.dump(), deep(256));
  EXPECT_TRUE(read_outside_json("{\"a\":" + deep(255) + "}").ok());
  EXPECT_FALSE(read_outside_json("{\"a\":" + deep(256) + "}").ok());
  // Brackets inside strings are text, not nesting.
  OutsideJson in_string = read_outside_json("[\"" + deep() + "\"]");
  ASSERT_TRUE(in_string.ok()) << in_string.error;
  EXPECT_EQ(in_string.value[0].get<std::string>().size(), 2 * kLevels);
}

TEST(DeepJsonReader, RefusesNumbersNoDoubleHolds) {
  for (const std::string& text :
       {std::string("1e400"), std::string("-1e400"), std::string("[1,{\"a\":1E+999}]"),
        std::string(400, '9'), "-" + std::string(400, '9'), "1" + std::string(1 << 20, '0')}) {
    OutsideJson r = read_outside_json(text);
    EXPECT_FALSE(r.ok()) << text.substr(0, 40);
    EXPECT_NE(r.error.find("number overflow"), std::string::npos) << r.error;
    EXPECT_LT(r.error.size(), 500u) << r.error.substr(0, 600);
  }
  // What a double holds is read as json::parse reads it.
  EXPECT_EQ(read_outside_json("1e-400").value, json::parse("1e-400"));
  EXPECT_EQ(read_outside_json("[18446744073709551616]").value,
            json::parse("[18446744073709551616]"));
  EXPECT_EQ(read_outside_json("-9223372036854775808").value.get<int64_t>(), INT64_MIN);
}

TEST(DeepJsonReader, OtherRefusalsSayWhereAndStayPrintable) {
  for (const std::string& text :
       {std::string(""), std::string("{\"a\":"), std::string("[1,]"), std::string("\"\xff\xfe\""),
        std::string("{} x"), "\"" + std::string(1 << 20, 'a') + "\x01\""}) {
    OutsideJson r = read_outside_json(text);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("parse error"), std::string::npos) << r.error;
    EXPECT_LT(r.error.size(), 500u) << r.error.substr(0, 600);
    for (unsigned char c : r.error) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << r.error;
  }
  OutsideJson ok = read_outside_json(R"( {"b":[1,2.5,{"c":null}],"a":"\u00e9","a":"x"} )");
  ASSERT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(ok.value, json::parse(R"({"b":[1,2.5,{"c":null}],"a":"x"})"));
}

TEST(DeepJsonReader, EvaluatorOutputAndToolArgumentsTooDeepOrOutOfRangeAreRefused) {
  for (const std::string& out :
       {R"({"schema_version":1,"correct":true,"score":1,"details":)" + deep() + "}",
        "compiling\n" + deep_objects(),
        std::string(R"({"schema_version":1,"correct":true,)"
                    R"("score":1e400})")}) {
    std::string error;
    EXPECT_FALSE(eval::parse_result(out, &error).has_value()) << out.substr(0, 60);
    EXPECT_FALSE(error.empty());
  }
  for (const std::string& args : {R"({"path":)" + deep() + "}", deep_objects(),
                                  std::string(R"({"path":"a","end_line":-1e400})")}) {
    std::string error;
    EXPECT_FALSE(parse_tool_arguments("read_file", args, &error).has_value());
    EXPECT_TRUE(error.find("nested deeper than 256") != std::string::npos ||
                error.find("number overflow") != std::string::npos)
        << error;
    EXPECT_LT(error.size(), 1000u);
  }
}

// --- the formats, streamed and not ------------------------------------------------------------

TEST(DeepJsonFormats, StreamEventsTooDeepOrOutOfRangeMakeTheReplyMalformed) {
  for (
      const std::string& data : std::vector<std::string>{
          R"({"choices":[{"index":0,"delta":{"content":)" + deep() + "}}]}",
          R"({"choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"prompt_tokens":1e400}})"}) {
    auto s = llm::OpenAiFormat().stream_assembler();
    s->on_event({"", data});
    EXPECT_FALSE(s->malformed.empty()) << data.substr(0, 60);
    EXPECT_LT(s->malformed.size(), 1000u);
  }
  for (const std::string& data : std::vector<std::string>{
           R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":)" +
               deep() + "}}",
           R"({"type":"message_start","message":{"usage":{"input_tokens":1e400}}})"}) {
    auto s = llm::AnthropicFormat().stream_assembler();
    s->on_event({"content_block_start", data});
    EXPECT_FALSE(s->malformed.empty()) << data.substr(0, 60);
    EXPECT_LT(s->malformed.size(), 1000u);
  }
  // Tool input assembled from pieces that nest too deep stays text; the reply check refuses it.
  auto s = llm::AnthropicFormat().stream_assembler();
  s->on_event({"", R"({"type":"message_start","message":{"role":"assistant","content":[]}})"});
  s->on_event({"", R"({"type":"content_block_start","index":0,"content_block":)"
                   R"({"type":"tool_use","id":"t1","name":"note","input":{}}})"});
  s->on_event({"", json{{"type", "content_block_delta"},
                        {"index", 0},
                        {"delta", {{"type", "input_json_delta"}, {"partial_json", deep()}}}}
                       .dump()});
  s->on_event({"", R"({"type":"message_stop"})"});
  ASSERT_TRUE(s->malformed.empty()) << s->malformed;
  llm::ParsedReply reply = llm::AnthropicFormat().parse_reply(s->body());
  ASSERT_TRUE(reply.malformed.empty()) << reply.malformed;
  std::vector<llm::ReplyProblem> problems = llm::check_tool_calls(reply.message, json::array());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, "bad_arguments");
  EXPECT_NE(problems[0].message.find("nested deeper than 256"), std::string::npos)
      << problems[0].message;
}

// --- a run against a model that answers with deep JSON ----------------------------------------

struct DeepReply {
  std::string name;
  std::string model;  // provider:model
  ScriptedResponse reply;
  ScriptedResponse finish;
  std::vector<std::string> extra;  // more flags of `marathon run`
  std::string says = "";           // what the refusal names; "" for the depth or number bound
};

// Whether a refusal's text names what `c` expects it to.
bool names_the_cause(const DeepReply& c, const std::string& text) {
  if (!c.says.empty()) return text.find(c.says) != std::string::npos;
  return text.find("nested deeper than 256") != std::string::npos ||
         text.find("number overflow") != std::string::npos;
}

std::string anthropic_body(const std::string& content) {
  return R"({"id":"msg_deep","type":"message","role":"assistant","content":)" + content +
         R"(,"stop_reason":"tool_use","usage":{"input_tokens":100,"output_tokens":20}})";
}

std::string sse(const std::vector<std::pair<std::string, std::string>>& events) {
  std::string out;
  for (const auto& [event, data] : events) {
    if (!event.empty()) out += "event: " + event + "\n";
    out += "data: " + data + "\n\n";
  }
  return out;
}

std::vector<DeepReply> deep_replies() {
  ScriptedResponse anthropic_finish = testing::anthropic_tool_use(json::array(
      {json{{"id", "toolu_f"}, {"name", "finish"}, {"arguments", {{"summary", "d"}}}}}));
  ScriptedResponse stream_reply = raw(sse(
      {{"message_start",
        R"({"type":"message_start","message":{"id":"m","type":"message","role":"assistant",)"
        R"("content":[],"usage":{"input_tokens":100,"output_tokens":1}}})"},
       {"content_block_start",
        R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":)" +
            deep() + "}}"},
       {"message_delta",
        R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}})"},
       {"message_stop", R"({"type":"message_stop"})"}}));
  stream_reply.headers["Content-Type"] = "text/event-stream";
  ScriptedResponse stream_finish = raw(sse(
      {{"message_start",
        R"({"type":"message_start","message":{"id":"m2","type":"message","role":"assistant",)"
        R"("content":[],"usage":{"input_tokens":100,"output_tokens":1}}})"},
       {"content_block_start",
        R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use",)"
        R"("id":"toolu_f","name":"finish","input":{}}})"},
       {"content_block_delta",
        R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",)"
        R"("partial_json":"{\"summary\":\"d\"}"}})"},
       {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
       {"message_delta",
        R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}})"},
       {"message_stop", R"({"type":"message_stop"})"}}));
  stream_finish.headers["Content-Type"] = "text/event-stream";
  auto openai_stream = [](std::string chunk) {
    ScriptedResponse r = raw("data: " + chunk + "\n\ndata: [DONE]\n\n");
    r.headers["Content-Type"] = "text/event-stream";
    return r;
  };
  ScriptedResponse openai_stream_finish = openai_stream(
      R"({"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,)"
      R"("id":"c_f","type":"function","function":{"name":"finish",)"
      R"("arguments":"{\"summary\":\"d\"}"}}]},"finish_reason":"tool_calls"}],)"
      R"("usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}})");
  return {
      {"openai_content",
       "openai:gpt-4o",
       openai_message(R"({"role":"assistant","content":)" + deep() + "}"),
       finish_openai(),
       {}},
      {"openai_object_arguments",
       "openai:gpt-4o",
       openai_message(R"({"role":"assistant","content":"","tool_calls":[{"id":"c1",)"
                      R"("type":"function","function":{"name":"note","arguments":)"
                      R"({"kind":"finding","text":)" +
                      deep() + "}}}]}"),
       finish_openai(),
       {}},
      {"openai_number_overflow",
       "openai:gpt-4o",
       openai_message(R"({"role":"assistant","content":"x","n":1e400})"),
       finish_openai(),
       {}},
      {"anthropic_tool_use_input",
       "anthropic:claude-scripted",
       raw(anthropic_body(R"([{"type":"tool_use","id":"toolu_1","name":"note","input":)"
                          R"({"kind":"finding","text":)" +
                          deep() + "}}]")),
       anthropic_finish,
       {}},
      {"openai_streamed_chunk",
       "openai:gpt-4o",
       openai_stream(R"({"choices":[{"index":0,"delta":{"content":)" + deep() + "}}]}"),
       openai_stream_finish,
       {"--stream"}},
      // Not JSON, and not UTF-8: the excerpt in the refusal must not make the refusal throw.
      {"openai_streamed_not_utf8",
       "openai:gpt-4o",
       openai_stream("\xff\xfe{\"choices\":[\xc3"),
       openai_stream_finish,
       {"--stream"},
       "parse error"},
      {"anthropic_streamed_block",
       "anthropic:claude-scripted",
       stream_reply,
       stream_finish,
       {"--stream"}},
  };
}

void PrintTo(const DeepReply& r, std::ostream* os) { *os << r.name; }

class DeepJsonRun : public ::testing::TestWithParam<DeepReply> {};

TEST_P(DeepJsonRun, TheReplyIsLoggedMalformedAndTheRunGoesOn) {
  const DeepReply& c = GetParam();
  TempDir dir("deep-json-" + c.name);
  ScriptedLlmServer server(
      [&](size_t index, const json&) { return index == 0 ? c.reply : c.finish; });
  fs::path run = dir / "run";
  int rc = run_binary(run_args(run, c.model, server.base_url(), c.extra), kEnv, dir / "log", 300);
  ASSERT_EQ(rc, 0) << "exit " << rc << "\n" << read_text(dir / "log").substr(0, 4000);
  std::vector<Event> events = load_events(run);
  EXPECT_EQ(fold(events).finish_reason, "finish");
  std::vector<Event> malformed = responses_with_error(events, "malformed");
  ASSERT_EQ(malformed.size(), 1u) << "the refused reply is one logged malformed response";
  const std::string why = error_message(malformed[0]);
  EXPECT_TRUE(names_the_cause(c, why)) << why;
  EXPECT_LT(why.size(), 2000u) << "a bounded excerpt, not the reply";
  EXPECT_EQ(server.request_count(), 2u);
  // The model is told its reply was unusable, and why.
  const std::string next = server.requests()[1].raw;
  EXPECT_TRUE(names_the_cause(c, next)) << next.substr(0, 2000);
}

INSTANTIATE_TEST_SUITE_P(Replies, DeepJsonRun, ::testing::ValuesIn(deep_replies()),
                         [](const auto& info) { return info.param.name; });

// Tool arguments sent as JSON text that nests too deep: the call is refused with the reason, the
// run goes on, nothing deep reaches the log.
TEST(DeepJsonRunArguments, ArgumentsTextTooDeepIsARefusedCall) {
  TempDir dir("deep-json-arguments-text");
  const std::string args = R"({"kind":"finding","text":)" + deep() + "}";
  ScriptedLlmServer server([&](size_t index, const json&) {
    if (index == 0) return testing::openai_tool_calls(json::array({call("note", args)}));
    return finish_openai();
  });
  fs::path run = dir / "run";
  int rc = run_binary(run_args(run, "openai:gpt-4o", server.base_url()), kEnv, dir / "log", 300);
  ASSERT_EQ(rc, 0) << "exit " << rc << "\n" << read_text(dir / "log").substr(0, 4000);
  std::vector<Event> events = load_events(run);
  EXPECT_EQ(fold(events).finish_reason, "finish");
  std::vector<Event> finished = events_of_type(events, events::ToolFinished::kType);
  ASSERT_FALSE(finished.empty());
  EXPECT_EQ(finished[0].payload.value("name", ""), "note");
  EXPECT_FALSE(finished[0].payload.value("ok", true));
  EXPECT_NE(finished[0].payload.value("output", "").find("nested deeper than 256"),
            std::string::npos)
      << finished[0].payload.value("output", "").substr(0, 1000);
}

// The reply that was refused once is never asked for again: the refusal is durable before the run
// can stop, and a resume asks with the prompt that follows it.
TEST(DeepJsonResume, ARefusedReplyIsNeverAskedForAgain) {
  TempDir dir("deep-json-resume");
  ScriptedLlmServer server([](size_t index, const json&) {
    if (index == 0) return openai_message(R"({"role":"assistant","content":)" + deep() + "}");
    if (index == 1) return testing::error_response(401, "invalid key");  // the run pauses
    return finish_openai();
  });
  fs::path run = dir / "run";
  int rc = run_binary(run_args(run, "openai:gpt-4o", server.base_url()), kEnv, dir / "log", 300);
  ASSERT_EQ(rc, 1) << "exit " << rc << " (a crash is 128+N)\n"
                   << read_text(dir / "log").substr(0, 4000);
  ASSERT_EQ(responses_with_error(load_events(run), "malformed").size(), 1u);
  rc = run_binary({"resume", run.string(), "--quiet"}, kEnv, dir / "log", 300);
  ASSERT_EQ(rc, 0) << "exit " << rc << "\n" << read_text(dir / "log").substr(0, 4000);
  std::vector<Event> events = load_events(run);
  EXPECT_EQ(fold(events).finish_reason, "finish");
  EXPECT_EQ(responses_with_error(events, "malformed").size(), 1u);
  std::vector<testing::RecordedRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  const json& refused = requests[0].body["messages"];
  for (size_t i = 1; i < requests.size(); ++i) {
    EXPECT_NE(requests[i].body["messages"], refused) << "request " << i << " asked again";
  }
}

// --- the stdio servers ------------------------------------------------------------------------

int64_t error_code(const json& reply) {
  return reply.is_object() && reply.contains("error") ? reply["error"].value("code", int64_t{0})
                                                      : 0;
}

// The lines every stdio server must answer with a -32700 parse error, each with what the error
// must say.
std::vector<std::pair<std::string, std::string>> hostile_lines() {
  return {
      {deep(), "nested deeper than 256"},
      {R"({"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":)" + deep() + "}}",
       "nested deeper than 256"},
      {deep_objects(), "nested deeper than 256"},
      {"1e400", "number overflow"},
      {R"({"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":1e400}})", "number overflow"},
      {R"({"jsonrpc":"2.0","id":-1e400,"method":"ping"})", "number overflow"},
  };
}

// Feeds each hostile line and checks its error, then `next` (a request with id 77) must be
// answered.
void expect_served(StdioChild& child, const json& next, const fs::path& err_log) {
  for (const auto& [line, says] : hostile_lines()) {
    ASSERT_TRUE(child.write_raw(line + "\n")) << read_text(err_log);
    std::optional<std::string> reply = child.read_line(60);
    ASSERT_TRUE(reply.has_value()) << "no answer to " << line.substr(0, 60) << "\n"
                                   << read_text(err_log);
    OutsideJson r = read_outside_json(*reply);
    ASSERT_TRUE(r.ok()) << *reply;
    EXPECT_EQ(error_code(r.value), -32700) << *reply;
    EXPECT_TRUE(r.value["id"].is_null()) << *reply;
    EXPECT_NE(r.value["error"].value("message", "").find(says), std::string::npos) << *reply;
    EXPECT_LT(reply->size(), 2000u);
  }
  ASSERT_TRUE(child.send(next));
  std::optional<std::string> reply = child.read_line(60);
  ASSERT_TRUE(reply.has_value()) << read_text(err_log);
  json j = json::parse(*reply);
  EXPECT_EQ(j["id"], 77) << *reply;
  EXPECT_TRUE(j.contains("result")) << *reply;
  child.close_stdin();
  std::optional<int> rc = child.wait_for(60);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0) << read_text(err_log);
}

TEST(DeepJsonStdio, ServeStdioAnswersParseErrorsAndServesOn) {
  TempDir dir("deep-json-serve");
  fs::path run = dir / "run";
  NewRunOptions o;
  o.run_dir = run;
  o.policy = "search";
  create_run(load_task(testing::tiny_task()), o);
  StdioChild child({MARATHON_BINARY, "serve", "--stdio", run.string()}, dir / "serve.log");
  ASSERT_TRUE(child.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}}));
  std::optional<std::string> init = child.read_line(60);
  ASSERT_TRUE(init.has_value()) << read_text(dir / "serve.log");
  expect_served(child, {{"jsonrpc", "2.0"}, {"id", 77}, {"method", "run/list"}}, dir / "serve.log");
}

TEST(DeepJsonStdio, McpAnswersParseErrorsAndServesOn) {
  TempDir dir("deep-json-mcp");
  StdioChild child({MARATHON_BINARY, "mcp", "--task", testing::tiny_task().string(), "--run-dir",
                    (dir / "run").string(), "--unsafe-no-sandbox"},
                   dir / "mcp.log");
  ASSERT_TRUE(child.send({{"jsonrpc", "2.0"},
                          {"id", 1},
                          {"method", "initialize"},
                          {"params",
                           {{"protocolVersion", "2025-06-18"},
                            {"capabilities", json::object()},
                            {"clientInfo", {{"name", "deep-json-test"}, {"version", "1"}}}}}}));
  std::optional<std::string> init = child.read_line(60);
  ASSERT_TRUE(init.has_value()) << read_text(dir / "mcp.log");
  ASSERT_NE(init->find("\"result\""), std::string::npos) << *init;
  ASSERT_TRUE(child.write_raw(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                              "\n"));
  expect_served(child, {{"jsonrpc", "2.0"}, {"id", 77}, {"method", "tools/list"}}, dir / "mcp.log");
}

// --- no raw json::parse on outside bytes ------------------------------------------------------

// The files under src/ that may call json::parse: the reader itself, the log reader's fallback
// and the store re-reading its own dump (text the runtime wrote), a report re-reading its own view,
// and the interpreter query of sandbox (which links no core), bounded by its own parser callback.
const std::set<std::string> kAllowedParsers = {"src/core/json_reader.cc", "src/core/event_store.cc",
                                               "src/serve/report.cc", "src/sandbox/python_env.cc"};

TEST(DeepJsonSources, OutsideBytesAreReadOnlyByTheBoundedReader) {
  const fs::path src = testing::source_dir() / "src";
  const std::regex raw_parse(R"((json::parse|json::sax_parse|nlohmann::json::parse)\s*\()");
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".cc" && ext != ".h") continue;
    const std::string rel = fs::relative(e.path(), testing::source_dir()).string();
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const size_t comment = line.find("//");
      const std::string code = comment == std::string::npos ? line : line.substr(0, comment);
      if (!std::regex_search(code, raw_parse)) continue;
      if (kAllowedParsers.count(rel)) continue;
      found.push_back(rel + ":" + std::to_string(n) + ": " + line);
    }
  }
  std::string list;
  for (const std::string& f : found) list += f + "\n";
  EXPECT_TRUE(found.empty()) << "read these with read_outside_json (core/json_reader.h):\n" << list;
}

}  // namespace
}  // namespace marathon
