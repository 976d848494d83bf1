#include "llm/anthropic_format.h"

#include "llm/openai_format.h"
#include "llm/usage_check.h"

namespace marathon::llm {

std::map<std::string, std::string> AnthropicFormat::headers(const std::string& api_key) const {
  std::map<std::string, std::string> h{{"Content-Type", "application/json"},
                                       {"anthropic-version", "2023-06-01"}};
  if (!api_key.empty()) h["x-api-key"] = api_key;
  return h;
}

namespace {

json text_block(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

// The string member `key` of a reply object, or `dflt` when it is missing, not a string or empty:
// the reply is untrusted, and json::value throws for a member of another type.
std::string reply_string(const json& obj, const char* key, const std::string& dflt = "") {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) return dflt;
  return it->get<std::string>();
}

// Appends `blocks` as a turn of `role`, merging into the previous turn when it has the same role
// (the API wants user and assistant turns to alternate).
void push_turn(json& out, const std::string& role, const json& blocks) {
  if (blocks.empty()) return;
  if (!out.empty() && out.back()["role"] == role) {
    for (const json& b : blocks) out.back()["content"].push_back(b);
  } else {
    out.push_back({{"role", role}, {"content", blocks}});
  }
}

json tool_use_input(const std::string& arguments) {
  if (arguments.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  json input = json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  if (input.is_object()) return input;
  // Unparsable arguments stay visible to the model as they were sent.
  return {{"_unparsed_arguments", arguments}};
}

}  // namespace

json to_anthropic_messages(const json& canonical, std::string* system) {
  json out = json::array();
  if (!canonical.is_array()) return out;
  for (const json& m : canonical) {
    if (!m.is_object()) continue;
    std::string role = m.value("role", "");
    std::string text = content_text(m.value("content", json()));
    if (role == "system") {
      if (system != nullptr) *system += (system->empty() ? "" : "\n\n") + text;
    } else if (role == "user") {
      push_turn(out, "user", text.empty() ? json::array() : json::array({text_block(text)}));
    } else if (role == "assistant") {
      json blocks = json::array();
      if (!text.empty()) blocks.push_back(text_block(text));
      if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
        for (const json& call : m["tool_calls"]) {
          const json& fn = call.value("function", json::object());
          blocks.push_back({{"type", "tool_use"},
                            {"id", call.value("id", "")},
                            {"name", fn.value("name", "")},
                            {"input", tool_use_input(fn.value("arguments", ""))}});
        }
      }
      if (blocks.empty()) blocks.push_back(text_block("(no content)"));
      push_turn(out, "assistant", blocks);
    } else if (role == "tool") {
      json block = {
          {"type", "tool_result"}, {"tool_use_id", m.value("tool_call_id", "")}, {"content", text}};
      if (m.value("is_error", false)) block["is_error"] = true;
      push_turn(out, "user", json::array({block}));
    }
  }
  return out;
}

json to_anthropic_tools(const json& openai_tools) {
  json out = json::array();
  if (!openai_tools.is_array()) return out;
  for (const json& t : openai_tools) {
    const json& fn = t.contains("function") ? t["function"] : t;
    out.push_back({{"name", fn.value("name", "")},
                   {"description", fn.value("description", "")},
                   {"input_schema", fn.value("parameters", json{{"type", "object"}})}});
  }
  return out;
}

json AnthropicFormat::request_body(const ChatRequest& request) const {
  std::string system;
  json body = {{"model", request.model},
               {"max_tokens", request.max_tokens},
               {"temperature", request.temperature},
               {"messages", to_anthropic_messages(request.messages, &system)}};
  if (!system.empty()) body["system"] = system;
  if (request.tools.is_array() && !request.tools.empty()) {
    body["tools"] = to_anthropic_tools(request.tools);
  }
  return body;
}

json assistant_from_anthropic(const json& content) {
  std::string text;
  json calls = json::array();
  for (const json& block : content) {
    if (!block.is_object()) continue;
    std::string type = reply_string(block, "type");
    if (type == "text" && block.contains("text") && block["text"].is_string()) {
      text += block["text"].get<std::string>();
    } else if (type == "tool_use") {
      json input = block.contains("input") ? block["input"] : json::object();
      calls.push_back(
          {{"id", reply_string(block, "id", "toolu_" + std::to_string(calls.size()))},
           {"type", "function"},
           {"function",
            {{"name", reply_string(block, "name")},
             {"arguments", input.is_string() ? input.get<std::string>() : input.dump()}}}});
    }
  }
  json m = {{"role", "assistant"}, {"content", text}};
  if (!calls.empty()) m["tool_calls"] = calls;
  return m;
}

ParsedReply AnthropicFormat::parse_reply(const json& body) const {
  ParsedReply r;
  if (!body.is_object()) {
    r.malformed = "reply is not a JSON object";
    return r;
  }
  if (reply_string(body, "type") == "error" || !body.contains("content") ||
      !body["content"].is_array()) {
    r.malformed = body.contains("error") ? "reply carries an error: " + body["error"].dump()
                                         : "reply has no \"content\" array";
    return r;
  }
  r.message = assistant_from_anthropic(body["content"]);
  std::string stop = body.contains("stop_reason") && body["stop_reason"].is_string()
                         ? body["stop_reason"].get<std::string>()
                         : "";
  if (stop == "end_turn" || stop == "stop_sequence") {
    r.finish_reason = "stop";
  } else if (stop == "tool_use") {
    r.finish_reason = "tool_calls";
  } else if (stop == "max_tokens") {
    r.finish_reason = "length";
  } else {
    r.finish_reason = stop;
  }
  if (body.contains("usage") && body["usage"].is_object()) {
    const json& u = body["usage"];
    r.usage_reported = u;
    for (const char* key : {"input_tokens", "output_tokens"}) {
      if (!u.contains(key) || u[key].is_null()) {
        r.usage_problems.push_back(std::string("usage.") + key + " is missing");
      }
    }
    const int64_t input = read_usage_count(u, "input_tokens", &r.usage_problems);
    r.usage.cache_read_tokens = read_usage_count(u, "cache_read_input_tokens", &r.usage_problems);
    r.usage.cache_write_tokens =
        read_usage_count(u, "cache_creation_input_tokens", &r.usage_problems);
    r.usage.completion_tokens = read_usage_count(u, "output_tokens", &r.usage_problems);
    // Cached prompt tokens are still prompt tokens the window holds (each term is below the bound,
    // so the sum cannot overflow).
    r.usage.prompt_tokens = input + r.usage.cache_read_tokens + r.usage.cache_write_tokens;
    if (r.usage_problems.empty()) {
      check_usage_total(r.usage.prompt_tokens,
                        "usage.input_tokens + cache_read_input_tokens + "
                        "cache_creation_input_tokens",
                        &r.usage_problems);
    }
  } else {
    r.usage_reported = body.contains("usage") ? body["usage"] : json();
    r.usage_problems.push_back(body.contains("usage") ? "usage is not an object"
                                                      : "the reply reports no usage");
  }
  return r;
}

}  // namespace marathon::llm
