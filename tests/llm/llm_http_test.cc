// Providers through real HTTP against the scripted server on loopback.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "llm/provider_registry.h"
#include "scripted_llm_server.h"

extern char** environ;

namespace marathon::llm {
namespace {

using testing::ScriptedLlmServer;
using testing::ScriptedResponse;

const json kTools = R"([
  {"type":"function","function":{"name":"read_file","description":"read",
   "parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
  {"type":"function","function":{"name":"write_file","description":"write",
   "parameters":{"type":"object","properties":{"path":{"type":"string"},
   "content":{"type":"string"}}}}}])"_json;

struct Fixture {
  std::vector<std::chrono::milliseconds> sleeps;
  std::unique_ptr<Provider> make(const std::string& provider, const ScriptedLlmServer& server,
                                 const std::string& model = "gpt-4o-mini") {
    ProviderConfig c;
    c.provider = provider;
    c.model = model;
    c.base_url = server.base_url();
    c.api_key_env = "MARATHON_TEST_LLM_KEY";
    c.max_retries = 3;
    c.timeout_s = 10;
    c.sleep = [this](std::chrono::milliseconds d) { sleeps.push_back(d); };
    return make_provider(c);
  }
};

ChatRequest request_with_tools() {
  ChatRequest r;
  r.model = "gpt-4o-mini";
  r.messages = json::array({{{"role", "system"}, {"content", "be brief"}},
                            {{"role", "user"}, {"content", "read a.txt"}}});
  r.tools = kTools;
  return r;
}

TEST(OpenAiProvider, ToolCallsAreParsedIntoCanonicalForm) {
  ScriptedLlmServer server({testing::openai_tool_calls(
      json::array({{{"id", "c1"}, {"name", "read_file"}, {"arguments", {{"path", "a.txt"}}}}}),
      "let me look", 120, 30)});
  Fixture f;
  ChatResult r = f.make("openai", server)->chat(request_with_tools());
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.message["role"], "assistant");
  EXPECT_EQ(r.message["content"], "let me look");
  EXPECT_EQ(r.message["tool_calls"][0]["id"], "c1");
  EXPECT_EQ(r.message["tool_calls"][0]["function"]["name"], "read_file");
  EXPECT_EQ(json::parse(r.message["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"path", "a.txt"}}));
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_TRUE(r.problems.empty());
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  EXPECT_EQ(reqs[0].body["tools"], kTools);
  EXPECT_EQ(reqs[0].body["messages"][1]["content"], "read a.txt");
  EXPECT_EQ(reqs[0].bytes, reqs[0].raw.size());
}

TEST(OpenAiProvider, RateLimitIsRetriedAfterTheServersRetryAfter) {
  ScriptedLlmServer server({testing::error_response(429, "slow down", {{"Retry-After", "2"}}),
                            testing::error_response(503, "overloaded"),
                            testing::openai_text("ok")});
  Fixture f;
  ChatResult r = f.make("openai", server)->chat(request_with_tools());
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(server.request_count(), 3u);
  ASSERT_EQ(f.sleeps.size(), 2u);
  EXPECT_EQ(f.sleeps[0], std::chrono::milliseconds(2000));  // Retry-After honoured exactly
  EXPECT_GE(f.sleeps[1],
            std::chrono::milliseconds(1000));  // backoff: retry 1 of base 1 s -> [1, 2]
  EXPECT_LE(f.sleeps[1], std::chrono::milliseconds(2000));
}

TEST(OpenAiProvider, RateLimitStillThereAfterEveryRetryIsExhausted) {
  std::vector<ScriptedResponse> script(
      10, testing::error_response(429, "quota", {{"retry-after", "1"}}));
  ScriptedLlmServer server(script);
  Fixture f;
  ChatResult r = f.make("openai", server)->chat(request_with_tools());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ErrorKind::kRateLimitedExhausted);
  EXPECT_EQ(r.attempts, 4);  // 1 + max_retries
  EXPECT_EQ(server.request_count(), 4u);
}

TEST(OpenAiProvider, RejectedKeyIsAClearAuthErrorWithoutRetryOrTheKey) {
  setenv("MARATHON_TEST_LLM_KEY", "sk-secret-123", 1);
  ScriptedLlmServer server({testing::error_response(401, "Incorrect API key provided")});
  Fixture f;
  ChatResult r = f.make("openai", server)->chat(request_with_tools());
  unsetenv("MARATHON_TEST_LLM_KEY");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ErrorKind::kAuth);
  EXPECT_EQ(r.error->http_status, 401);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_NE(r.error->message.find("Incorrect API key provided"), std::string::npos);
  EXPECT_NE(r.error->message.find("MARATHON_TEST_LLM_KEY"), std::string::npos) << r.error->message;
  EXPECT_EQ(r.error->message.find("sk-secret-123"), std::string::npos);
  EXPECT_EQ(server.requests()[0].headers.at("authorization"), "Bearer sk-secret-123");
}

TEST(OpenAiProvider, NotFoundAndContextLengthAreTheirOwnKinds) {
  ScriptedLlmServer server(
      {testing::error_response(404, "The model `gpt-9` does not exist"),
       testing::error_response(400,
                               "This model's maximum context length is 8192 tokens. However, "
                               "your messages resulted in 9001 tokens.",
                               {}, "invalid_request_error")});
  Fixture f;
  auto p = f.make("openai", server);
  ChatResult nf = p->chat(request_with_tools());
  EXPECT_EQ(nf.error->kind, ErrorKind::kNotFound);
  EXPECT_NE(nf.error->message.find("gpt-9"), std::string::npos);
  ChatResult cl = p->chat(request_with_tools());
  EXPECT_EQ(cl.error->kind, ErrorKind::kContextLength);
  EXPECT_EQ(cl.attempts, 1);
}

TEST(OpenAiProvider, BodyThatIsNotJsonIsMalformedNotACrash) {
  ScriptedResponse garbage;
  garbage.raw_body = "{\"choices\": [ {\"message\": ";  // cut off mid-body
  ScriptedResponse no_choices;
  no_choices.body = {{"object", "chat.completion"}};
  ScriptedLlmServer server({garbage, no_choices});
  Fixture f;
  auto p = f.make("openai", server);
  ChatResult r = p->chat(request_with_tools());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ErrorKind::kMalformed);
  EXPECT_NE(r.error->message.find("not JSON"), std::string::npos) << r.error->message;
  ChatResult r2 = p->chat(request_with_tools());
  EXPECT_EQ(r2.error->kind, ErrorKind::kMalformed);
  EXPECT_NE(r2.error->message.find("choices"), std::string::npos) << r2.error->message;
}

TEST(OpenAiProvider, BadToolArgumentsAndUnknownToolAreFlaggedAndTheReplyKept) {
  ScriptedLlmServer server({testing::openai_tool_calls(
      json::array({{{"id", "x"}, {"name", "read_file"}, {"arguments", "{\"path\": \"a.txt\""}},
                   {{"id", "y"}, {"name", "delete_everything"}, {"arguments", "{}"}}}))});
  Fixture f;
  ChatResult r = f.make("openai", server)->chat(request_with_tools());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.message["tool_calls"].size(), 2u);
  EXPECT_EQ(r.message["tool_calls"][0]["function"]["arguments"], "{\"path\": \"a.txt\"");
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_EQ(r.problems[0].tool_call_id, "x");
  EXPECT_EQ(r.problems[0].kind, "bad_arguments");
  EXPECT_EQ(r.problems[1].kind, "unknown_tool");
  EXPECT_NE(r.problems[1].message.find("read_file, write_file"), std::string::npos);
}

TEST(OpenAiProvider, UnreachableServerIsATransportErrorAfterRetries) {
  int port;
  {
    ScriptedLlmServer gone(std::vector<ScriptedResponse>{});
    port = gone.port();
  }  // stopped: nothing listens there now
  ProviderConfig c;
  c.provider = "vllm";
  c.model = "m";
  c.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  c.max_retries = 2;
  int sleeps = 0;
  c.sleep = [&](std::chrono::milliseconds) { ++sleeps; };
  ChatResult r = make_provider(c)->chat(request_with_tools());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ErrorKind::kTransport);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(sleeps, 2);
  EXPECT_NE(r.error->message.find("127.0.0.1"), std::string::npos) << r.error->message;
}

TEST(OpenAiProvider, SlowServerHitsTheTimeout) {
  ScriptedResponse slow = testing::openai_text("late");
  slow.delay_s = 2;
  ScriptedLlmServer server({slow});
  ProviderConfig c;
  c.provider = "vllm";
  c.model = "m";
  c.base_url = server.base_url();
  c.timeout_s = 0.3;
  c.max_retries = 0;
  ChatResult r = make_provider(c)->chat(request_with_tools());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->kind, ErrorKind::kTransport);
  EXPECT_NE(r.error->message.find("timed out"), std::string::npos) << r.error->message;
}

TEST(OpenAiProvider, CostIsUsageTimesTheModelsPrice) {
  ScriptedLlmServer server(
      {testing::openai_text("a", 1'000'000, 100'000), testing::openai_text("b", 2000, 1000)});
  Fixture f;
  auto p = f.make("openai", server, "gpt-4o-mini");
  ChatRequest req = request_with_tools();
  ChatResult r = p->chat(req);  // gpt-4o-mini: $0.15 in, $0.60 out per Mtok
  EXPECT_EQ(r.usage.prompt_tokens, 1'000'000);
  EXPECT_NEAR(r.cost_usd, 0.15 + 0.06, 1e-12);
  ProviderConfig c = p->config();
  c.price = Price{10, 20};
  auto priced = make_provider(c);
  ChatResult r2 = priced->chat(req);
  EXPECT_NEAR(r2.cost_usd, (2000 * 10 + 1000 * 20) / 1e6, 1e-12);
}

TEST(AnthropicProvider, TranslatesRequestAndReplyThroughRealHttp) {
  setenv("MARATHON_TEST_LLM_KEY", "ant-key", 1);
  ScriptedLlmServer server({testing::anthropic_tool_use(
      json::array({{{"id", "toolu_1"},
                    {"name", "write_file"},
                    {"arguments", {{"path", "k.cc"}, {"content", "int x;"}}}}}),
      "writing", 300, 40)});
  Fixture f;
  auto p = f.make("anthropic", server, "claude-sonnet-4-20250514");
  ChatRequest req = request_with_tools();
  req.model = "claude-sonnet-4-20250514";
  req.messages.push_back(
      {{"role", "assistant"},
       {"content", ""},
       {"tool_calls",
        {{{"id", "toolu_0"},
          {"type", "function"},
          {"function", {{"name", "read_file"}, {"arguments", "{\"path\":\"a.txt\"}"}}}}}}});
  req.messages.push_back({{"role", "tool"}, {"tool_call_id", "toolu_0"}, {"content", "hello"}});
  ChatResult r = p->chat(req);
  unsetenv("MARATHON_TEST_LLM_KEY");
  ASSERT_TRUE(r.ok()) << r.error->message;
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/messages");
  EXPECT_EQ(reqs[0].headers.at("x-api-key"), "ant-key");
  EXPECT_EQ(reqs[0].headers.at("anthropic-version"), "2023-06-01");
  const json& body = reqs[0].body;
  EXPECT_EQ(body["system"], "be brief");
  EXPECT_EQ(body["tools"][0]["input_schema"], kTools[0]["function"]["parameters"]);
  EXPECT_EQ(body["messages"][1]["content"][0]["type"], "tool_use");
  EXPECT_EQ(body["messages"][2]["content"][0]["tool_use_id"], "toolu_0");
  EXPECT_EQ(r.message["content"], "writing");
  EXPECT_EQ(r.message["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(json::parse(r.message["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"path", "k.cc"}, {"content", "int x;"}}));
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_NEAR(r.cost_usd, (300 * 3.0 + 40 * 15.0) / 1e6, 1e-12);
}

TEST(ScriptedServerExecutable, ServesAJsonlScriptByTurnAndRecordsRequests) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("marathon-scripted-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "script.jsonl")
      << testing::openai_text("first").body.dump() << "\n"
      << json{{"status", 200}, {"body", testing::openai_text("second").body}}.dump() << "\n";
  std::string script = (dir / "script.jsonl").string(), record = (dir / "record.jsonl").string(),
              port_file = (dir / "port").string();
  const char* argv[] = {
      SCRIPTED_LLM_SERVER, "--script",        script.c_str(), "--record", record.c_str(),
      "--port-file",       port_file.c_str(), "--index",      "turn",     nullptr};
  pid_t pid;
  ASSERT_EQ(
      posix_spawn(&pid, SCRIPTED_LLM_SERVER, nullptr, nullptr, const_cast<char**>(argv), environ),
      0);
  for (int i = 0; i < 600 && !fs::exists(port_file); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(port_file)) << "the server never wrote its port";
  int port = 0;
  std::ifstream(port_file) >> port;
  ProviderConfig c;
  c.provider = "vllm";
  c.model = "m";
  c.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  auto p = make_provider(c);
  ChatRequest req = request_with_tools();
  EXPECT_EQ(p->chat(req).message["content"], "first");
  EXPECT_EQ(p->chat(req).message["content"], "first");  // same turn again: same answer
  req.messages.push_back({{"role", "assistant"}, {"content", "first"}});
  EXPECT_EQ(p->chat(req).message["content"], "second");
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::ifstream in(record);
  std::string line;
  std::vector<json> lines;
  while (std::getline(in, line)) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2]["line"], 1);
  EXPECT_EQ(lines[2]["body"]["messages"].size(), 3u);
  EXPECT_GT(lines[0]["bytes"].get<int>(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace marathon::llm
