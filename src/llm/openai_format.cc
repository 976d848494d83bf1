#include "llm/openai_format.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/json_reader.h"
#include "llm/model_table.h"
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

namespace {

// What a previous reply kept for the record but the API must not get back: reasoning text
// (DeepSeek answers 400 to a request that carries reasoning_content) and Anthropic thinking blocks.
bool carries_reply_extras(const json& m) {
  return m.is_object() && (m.contains("reasoning_content") || m.contains("thinking_blocks") ||
                           m.contains("refusal"));
}

}  // namespace

int status_of_error_type(const std::string& type) {
  if (type == "overloaded_error") return 529;
  if (type == "rate_limit_error" || type == "rate_limit_exceeded") return 429;
  if (type == "api_error" || type == "server_error" || type == "internal_server_error") return 500;
  return 400;
}

json OpenAiFormat::request_body(const ChatRequest& request) const {
  json body = {{"model", request.model}, {"messages", request.messages}};
  if (std::any_of(request.messages.begin(), request.messages.end(), carries_reply_extras)) {
    for (json& m : body["messages"]) {
      if (!carries_reply_extras(m)) continue;
      m.erase("reasoning_content");
      m.erase("thinking_blocks");
      m.erase("refusal");
    }
  }
  // A reasoning model takes max_completion_tokens wherever it is reached (OpenAI answers 400 to
  // max_tokens), and no sampling parameters; a model the table does not list gets what is asked.
  const ModelInfo* info = find_model(request.model);
  const bool completion_tokens =
      max_completion_tokens_ || (info != nullptr && info->max_completion_tokens);
  body[completion_tokens ? "max_completion_tokens" : "max_tokens"] = request.max_tokens;
  if (request.temperature && takes_temperature(info)) body["temperature"] = *request.temperature;
  if (!request.reasoning_effort.empty() && takes_reasoning_effort(info, request.reasoning_effort)) {
    body["reasoning_effort"] = request.reasoning_effort;
  }
  if (request.tools.is_array() && !request.tools.empty()) {
    body["tools"] = request.tools;
    body["tool_choice"] = "auto";
  }
  if (request.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};  // the last chunk carries the usage
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
  // A refusal comes instead of content: it is what the model said, so the transcript shows it.
  if (auto refusal = m.find("refusal"); refusal != m.end() && refusal->is_string() &&
                                        !refusal->get_ref<const std::string&>().empty()) {
    r.message["refusal"] = *refusal;
    if (r.message["content"].get_ref<const std::string&>().empty()) {
      r.message["content"] = "(refused) " + refusal->get<std::string>();
    }
  }
  // vLLM, SGLang and DeepSeek put a reasoning model's thinking beside the content; it is kept in
  // the log, never sent back.
  for (const char* key : {"reasoning_content", "reasoning"}) {
    if (auto rc = m.find(key);
        rc != m.end() && rc->is_string() && !rc->get_ref<const std::string&>().empty()) {
      r.message["reasoning_content"] = *rc;
      break;
    }
  }
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
    // Automatic prefix caching: the cached part of prompt_tokens, billed at the cache-read rate.
    if (auto d = u.find("prompt_tokens_details"); d != u.end() && d->is_object()) {
      r.usage.cache_read_tokens = read_usage_count(*d, "cached_tokens", &r.usage_problems);
      if (r.usage.cache_read_tokens > r.usage.prompt_tokens) {
        r.usage_problems.push_back(fmt::format(
            "usage.prompt_tokens_details.cached_tokens = {}: more than prompt_tokens ({})",
            r.usage.cache_read_tokens, r.usage.prompt_tokens));
      }
    }
  } else {
    r.usage_reported = body.contains("usage") ? body["usage"] : json();
    r.usage_problems.push_back(body.contains("usage") ? "usage is not an object"
                                                      : "the reply reports no usage");
  }
  return r;
}

namespace {

// OpenAI chat-completion chunks: {"choices":[{"index":0,"delta":{role?, content?, refusal?,
// reasoning_content?, tool_calls?: [{index, id?, type?, function: {name?, arguments?}}]},
// "finish_reason"}], "usage": null | {...}}, ended by `data: [DONE]`. Tool calls are keyed by their
// `index`; their id and name arrive once, their arguments in pieces.
class OpenAiStream : public StreamAssembler {
 public:
  void on_event(const SseEvent& e) override {
    if (e.data == "[DONE]") {
      done = true;
      return;
    }
    OutsideJson read = read_outside_json(e.data);
    json chunk = std::move(read.value);
    if (!chunk.is_object()) {
      malformed = "a stream chunk is not a JSON object" +
                  (read.ok() ? "" : " (" + read.error + ")") + ": " + e.data.substr(0, 200);
      return;
    }
    if (auto err = chunk.find("error"); err != chunk.end() && !err->is_null()) {
      error = {{"error", *err}};
      std::string type;
      for (const char* key : {"type", "code"}) {
        if (err->is_object() && err->contains(key) && err->at(key).is_string()) {
          type = err->at(key).get<std::string>();
          break;
        }
      }
      error_status = status_of_error_type(type);
      return;
    }
    if (auto u = chunk.find("usage"); u != chunk.end() && u->is_object()) usage_ = *u;
    if (auto m = chunk.find("model"); m != chunk.end() && m->is_string()) model_ = *m;
    auto choices = chunk.find("choices");
    if (choices == chunk.end() || !choices->is_array()) return;
    for (const json& c : *choices) {
      if (!c.is_object() || c.value("index", 0) != 0) continue;  // one choice is asked for
      if (auto f = c.find("finish_reason"); f != c.end() && f->is_string()) finish_ = *f;
      auto d = c.find("delta");
      if (d == c.end() || !d->is_object()) continue;
      append(*d, "content", &content_);
      append(*d, "refusal", &refusal_);
      append(*d, "reasoning_content", &reasoning_);
      append(*d, "reasoning", &reasoning_);
      if (auto calls = d->find("tool_calls"); calls != d->end() && calls->is_array()) {
        for (const json& tc : *calls) add_call(tc);
      }
    }
  }

  json body() const override {
    json message = {{"role", "assistant"}, {"content", content_}};
    if (!refusal_.empty()) message["refusal"] = refusal_;
    if (!reasoning_.empty()) message["reasoning_content"] = reasoning_;
    if (!calls_.empty()) {
      json list = json::array();
      for (const auto& [index, c] : calls_) list.push_back(c);
      message["tool_calls"] = std::move(list);
    }
    json b = {
        {"object", "chat.completion"},
        {"choices", json::array({{{"index", 0},
                                  {"message", std::move(message)},
                                  {"finish_reason", finish_.empty() ? json() : json(finish_)}}})}};
    if (!usage_.is_null()) b["usage"] = usage_;
    if (!model_.empty()) b["model"] = model_;
    return b;
  }

 private:
  static void append(const json& delta, const char* key, std::string* into) {
    auto it = delta.find(key);
    if (it != delta.end() && it->is_string()) *into += it->get_ref<const std::string&>();
  }

  void add_call(const json& tc) {
    if (!tc.is_object()) return;
    const int64_t index = tc.contains("index") && tc["index"].is_number_integer()
                              ? tc["index"].get<int64_t>()
                              : static_cast<int64_t>(calls_.size());
    json& call = calls_[index];
    if (call.is_null()) {
      call = {{"type", "function"}, {"function", {{"name", ""}, {"arguments", ""}}}};
    }
    if (auto id = tc.find("id"); id != tc.end() && id->is_string()) call["id"] = *id;
    auto fn = tc.find("function");
    if (fn == tc.end() || !fn->is_object()) return;
    if (auto n = fn->find("name"); n != fn->end() && n->is_string()) {
      call["function"]["name"] =
          call["function"]["name"].get<std::string>() + n->get<std::string>();
    }
    if (auto a = fn->find("arguments"); a != fn->end()) {
      std::string piece = a->is_string() ? a->get<std::string>() : a->is_null() ? "" : a->dump();
      call["function"]["arguments"] = call["function"]["arguments"].get<std::string>() + piece;
    }
  }

  std::string content_, refusal_, reasoning_, finish_, model_;
  std::map<int64_t, json> calls_;
  json usage_;
};

}  // namespace

std::unique_ptr<StreamAssembler> OpenAiFormat::stream_assembler() const {
  return std::make_unique<OpenAiStream>();
}

}  // namespace marathon::llm
