#include "llm/openai_format.h"

#include "llm/usage_check.h"

namespace marathon::llm {

std::string content_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array()) {
    for (const json& part : content) {
      if (part.is_string()) {
        out += part.get<std::string>();
      } else if (part.is_object() && part.contains("text") && part["text"].is_string()) {
        out += part["text"].get<std::string>();
      }
    }
  }
  return out;
}

std::map<std::string, std::string> OpenAiFormat::headers(const std::string& api_key) const {
  std::map<std::string, std::string> h{{"Content-Type", "application/json"}};
  if (!api_key.empty()) h["Authorization"] = "Bearer " + api_key;
  return h;
}

json OpenAiFormat::request_body(const ChatRequest& request) const {
  json body = {{"model", request.model}, {"messages", request.messages}};
  body[max_completion_tokens_ ? "max_completion_tokens" : "max_tokens"] = request.max_tokens;
  body["temperature"] = request.temperature;
  if (request.tools.is_array() && !request.tools.empty()) {
    body["tools"] = request.tools;
    body["tool_choice"] = "auto";
  }
  return body;
}

namespace {

json normalise_call(const json& call, size_t index) {
  json fn = call.contains("function") && call["function"].is_object() ? call["function"] : call;
  json out = {{"id", "call_" + std::to_string(index)}, {"type", "function"}};
  if (call.contains("id") && call["id"].is_string() && !call["id"].get<std::string>().empty()) {
    out["id"] = call["id"];
  }
  std::string name =
      fn.contains("name") && fn["name"].is_string() ? fn["name"].get<std::string>() : "";
  std::string arguments;
  if (fn.contains("arguments")) {
    const json& a = fn["arguments"];
    // Some servers (Ollama, older vLLM) send the arguments as an object instead of JSON text.
    arguments = a.is_string() ? a.get<std::string>() : a.is_null() ? "" : a.dump();
  }
  out["function"] = {{"name", name}, {"arguments", arguments}};
  return out;
}

}  // namespace

ParsedReply OpenAiFormat::parse_reply(const json& body) const {
  ParsedReply r;
  if (!body.is_object()) {
    r.malformed = "reply is not a JSON object";
    return r;
  }
  if (!body.contains("choices") || !body["choices"].is_array() || body["choices"].empty()) {
    r.malformed = body.contains("error")
                      ? "reply carries an error instead of choices: " + body["error"].dump()
                      : "reply has no \"choices\" array";
    return r;
  }
  const json& choice = body["choices"][0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object()) {
    r.malformed = "choices[0] has no \"message\" object";
    return r;
  }
  const json& m = choice["message"];
  r.message = {{"role", "assistant"}, {"content", content_text(m.value("content", json()))}};
  json calls = json::array();
  if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
    for (size_t i = 0; i < m["tool_calls"].size(); ++i) {
      calls.push_back(normalise_call(m["tool_calls"][i], i));
    }
  } else if (m.contains("function_call") && m["function_call"].is_object()) {  // legacy form
    calls.push_back(normalise_call(json{{"function", m["function_call"]}}, 0));
  }
  if (!calls.empty()) r.message["tool_calls"] = calls;
  std::string finish = choice.contains("finish_reason") && choice["finish_reason"].is_string()
                           ? choice["finish_reason"].get<std::string>()
                           : "";
  if (finish == "function_call") finish = "tool_calls";
  r.finish_reason = finish;
  if (body.contains("usage") && body["usage"].is_object()) {
    const json& u = body["usage"];
    r.usage_reported = u;
    for (const char* key : {"prompt_tokens", "completion_tokens"}) {
      if (!u.contains(key) || u[key].is_null()) {
        r.usage_problems.push_back(std::string("usage.") + key + " is missing");
      }
    }
    r.usage.prompt_tokens = read_usage_count(u, "prompt_tokens", &r.usage_problems);
    r.usage.completion_tokens = read_usage_count(u, "completion_tokens", &r.usage_problems);
  } else {
    r.usage_reported = body.contains("usage") ? body["usage"] : json();
    r.usage_problems.push_back(body.contains("usage") ? "usage is not an object"
                                                      : "the reply reports no usage");
  }
  return r;
}

}  // namespace marathon::llm
