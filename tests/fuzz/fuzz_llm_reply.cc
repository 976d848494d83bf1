// Fuzz target: a provider's 2xx reply body, as HttpProvider::chat handles it
// (llm/http_provider.cc): read as JSON by read_outside_json (core/json_reader.h: nesting and number
// range bounded while it parses), turned into canonical form by the wire format's
// parse_reply (llm/openai_format.cc, llm/anthropic_format.cc), its tool calls checked
// (llm/reply_check.cc), and the assistant message then sent back in the next request, through
// either format. The first input byte picks the format; the rest is the body. The seeds are real
// reply shapes of both APIs. Contracts held (llm/provider.h, llm/wire_format.h): nothing a provider
// sends makes these throw; a reply is either `malformed` or a canonical assistant message (content
// a string, each tool call an object with a non-empty string id, a string name and string
// arguments); each problem check_tool_calls reports names its call and kind. The seeds include
// bodies nested 200,000 levels deep and numbers no double holds (1e400): refused, never a crash.
#include <set>

#include "core/json_reader.h"
#include "fuzz_check.h"
#include "llm/anthropic_format.h"
#include "llm/openai_format.h"
#include "llm/reply_check.h"

namespace {

using marathon::json;
using marathon::fuzz::expect;
namespace llm = marathon::llm;

const json& offered_tools() {
  static const json tools = [] {
    json t = json::array();
    for (const char* name : {"read_file", "write_file", "evaluate", "finish"}) {
      t.push_back({{"type", "function"},
                   {"function", {{"name", name}, {"parameters", {{"type", "object"}}}}}});
    }
    return t;
  }();
  return tools;
}

void check_message(const json& m) {
  expect(m.is_object() && m.value("role", json()) == "assistant", "not an assistant message");
  expect(m.contains("content") && m["content"].is_string(), "content is not a string");
  if (!m.contains("tool_calls")) return;
  expect(m["tool_calls"].is_array() && !m["tool_calls"].empty(), "tool_calls is not a list");
  for (const json& c : m["tool_calls"]) {
    expect(c.is_object() && c.contains("id") && c["id"].is_string() &&
               !c["id"].get<std::string>().empty(),
           "a tool call without a string id: " + c.dump());
    expect(c.contains("function") && c["function"].is_object(), "a tool call without function");
    const json& fn = c["function"];
    expect(fn.contains("name") && fn["name"].is_string() && fn.contains("arguments") &&
               fn["arguments"].is_string(),
           "a tool call whose name or arguments are not strings: " + c.dump());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const llm::OpenAiFormat openai;
  static const llm::OpenAiFormat openai_new(/*max_completion_tokens=*/true);
  static const llm::AnthropicFormat anthropic;
  const llm::WireFormat* formats[] = {&openai, &anthropic, &openai_new};
  const llm::WireFormat& format = *formats[data[0] % 3];

  marathon::OutsideJson read =
      marathon::read_outside_json(marathon::fuzz::bytes(data + 1, size - 1));
  if (!read.ok()) {  // chat() reports a body that is not JSON before parsing
    expect(read.value.is_discarded() && read.error.size() < 1000, "a refusal without a reason");
    return 0;
  }
  const json& body = read.value;
  llm::ParsedReply reply = format.parse_reply(body);
  if (!reply.malformed.empty()) return 0;
  check_message(reply.message);

  std::set<std::string> ids;
  for (const json& c : reply.message.value("tool_calls", json::array())) ids.insert(c["id"]);
  for (const llm::ReplyProblem& p : llm::check_tool_calls(reply.message, offered_tools())) {
    expect(ids.count(p.tool_call_id) == 1, "a problem naming no call of the reply: " + p.message);
    expect(p.kind == "bad_arguments" || p.kind == "unknown_tool" || p.kind == "missing_name",
           "a problem of unknown kind " + p.kind);
  }

  // The next turn carries the reply (and a result per call) back to the provider.
  llm::ChatRequest next;
  next.model = "m";
  next.tools = offered_tools();
  next.messages = json::array({{{"role", "system"}, {"content", "s"}},
                               {{"role", "user"}, {"content", "u"}},
                               reply.message});
  for (const json& c : reply.message.value("tool_calls", json::array())) {
    next.messages.push_back({{"role", "tool"}, {"tool_call_id", c["id"]}, {"content", "ok"}});
  }
  (void)openai.request_body(next).dump();
  (void)anthropic.request_body(next).dump();
  return 0;
}
