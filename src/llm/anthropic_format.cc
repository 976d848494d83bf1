#include "llm/anthropic_format.h"

#include <algorithm>

#include "core/json_reader.h"
#include "llm/model_table.h"
#include "llm/openai_format.h"
#include "llm/usage_check.h"

namespace marathon::llm {

std::string AnthropicFormat::endpoint(const std::string& base_url) const {
  // The SDK's base URL is the host (https://api.anthropic.com); marathon's has always ended in /v1.
  const bool has_v1 = base_url.size() >= 3 && base_url.compare(base_url.size() - 3, 3, "/v1") == 0;
  return base_url + (has_v1 ? "" : "/v1") + path();
}

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
  json input = read_outside_json(arguments).value;
  if (input.is_object()) return input;
  // Unparsable arguments stay visible to the model as they were sent.
  return {{"_unparsed_arguments", arguments}};
}

}  // namespace

namespace {

// Appends one canonical message to `out` (merging turns of the same role); system text goes to
// `system`.
void append_message(json& out, const json& m, std::string* system) {
  std::string role = m.value("role", "");
  std::string text = content_text(m.value("content", json()));
  if (role == "system") {
    if (system != nullptr) *system += (system->empty() ? "" : "\n\n") + text;
  } else if (role == "user") {
    push_turn(out, "user", text.empty() ? json::array() : json::array({text_block(text)}));
  } else if (role == "assistant") {
    json blocks = json::array();
    // Thinking blocks go back first and unchanged (their signatures are checked): the API wants
    // them with the tool_use they led to while extended thinking is on.
    if (auto t = m.find("thinking_blocks"); t != m.end() && t->is_array()) {
      for (const json& b : *t) {
        if (b.is_object()) blocks.push_back(b);
      }
    }
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

}  // namespace

namespace {

// A final assistant turn (a paused turn sent back to be continued) may not end in whitespace: the
// API answers 400 "final assistant content cannot end with trailing whitespace". Its last text
// block is trimmed at the end, and dropped when nothing else is left of it; a turn left with no
// block at all is dropped.
void trim_final_assistant_text(json& out) {
  if (out.empty() || out.back()["role"] != "assistant") return;
  json& blocks = out.back()["content"];
  if (blocks.empty() || blocks.back().value("type", "") != "text") return;
  json& block = blocks.back();
  std::string text = block.value("text", "");
  const size_t end = text.find_last_not_of(" \t\r\n\f\v");
  if (end == std::string::npos) {
    blocks.erase(blocks.size() - 1);
    if (blocks.empty()) out.erase(out.size() - 1);
    return;
  }
  if (end + 1 < text.size()) block["text"] = text.substr(0, end + 1);
}

}  // namespace

json to_anthropic_messages(const json& canonical, std::string* system,
                           const std::vector<int64_t>& breakpoints, bool* system_breakpoint) {
  json out = json::array();
  if (!canonical.is_array()) return out;
  std::vector<int64_t> marks = breakpoints;
  std::sort(marks.begin(), marks.end());
  marks.erase(std::unique(marks.begin(), marks.end()), marks.end());
  if (marks.size() > kMaxCacheBreakpoints) {
    marks.erase(marks.begin(), marks.end() - static_cast<std::ptrdiff_t>(kMaxCacheBreakpoints));
  }
  for (int64_t index = 0; index < static_cast<int64_t>(canonical.size()); ++index) {
    const json& m = canonical[static_cast<size_t>(index)];
    if (!m.is_object()) continue;
    append_message(out, m, system);
    if (!std::binary_search(marks.begin(), marks.end(), index)) continue;
    // The breakpoint goes on the last block so far: the end of this message.
    if (m.value("role", "") == "system") {
      if (system_breakpoint != nullptr) *system_breakpoint = true;
    } else if (!out.empty() && !out.back()["content"].empty()) {
      out.back()["content"].back()["cache_control"] = {{"type", "ephemeral"}};
    }
  }
  trim_final_assistant_text(out);
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
  bool system_breakpoint = false;
  json body = {{"model", request.model},
               {"max_tokens", request.max_tokens},
               {"messages", to_anthropic_messages(request.messages, &system,
                                                  request.cache_breakpoints, &system_breakpoint)}};
  const ModelInfo* info = find_model(request.model);
  if (request.thinking_budget > 0 && takes_thinking(info)) {
    // Extended thinking: max_tokens must exceed the budget, and no temperature may be set.
    body["thinking"] = {{"type", "enabled"}, {"budget_tokens", request.thinking_budget}};
    if (request.max_tokens <= request.thinking_budget) {
      body["max_tokens"] = request.thinking_budget + kMinAnswerTokens;
    }
  } else if (request.temperature && takes_temperature(info)) {
    body["temperature"] = *request.temperature;  // only when asked: the newest models refuse it
  }
  if (request.stream) body["stream"] = true;
  if (!system.empty()) {
    // A breakpoint on the system prompt caches the tools and the system prompt (they come first
    // in the cached prefix); only a block can carry it.
    body["system"] =
        system_breakpoint
            ? json::array({json{
                  {"type", "text"}, {"text", system}, {"cache_control", {{"type", "ephemeral"}}}}})
            : json(system);
  }
  if (request.tools.is_array() && !request.tools.empty()) {
    body["tools"] = to_anthropic_tools(request.tools);
  }
  return body;
}

json assistant_from_anthropic(const json& content) {
  std::string text;
  json calls = json::array();
  json thinking = json::array();
  for (const json& block : content) {
    if (!block.is_object()) continue;
    std::string type = reply_string(block, "type");
    if (type == "thinking" || type == "redacted_thinking") {
      thinking.push_back(block);  // kept whole: it is sent back as it came
    } else if (type == "text" && block.contains("text") && block["text"].is_string()) {
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
  if (!thinking.empty()) m["thinking_blocks"] = std::move(thinking);
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
  } else if (stop == "refusal") {
    r.finish_reason = "content_filter";  // OpenAI's word for a reply the model declined
  } else if (stop == "pause_turn") {
    r.finish_reason = events::ModelResponse::kFinishPauseTurn;  // the loop sends it back as it is
  } else {  // words this version does not know, kept for the log
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

namespace {

// Anthropic's stream: message_start {message: {..., content: [], usage}}, then per content block
// content_block_start {index, content_block}, content_block_delta {index, delta: text_delta |
// input_json_delta | thinking_delta | signature_delta}, content_block_stop; message_delta {delta:
// {stop_reason, stop_sequence}, usage}; message_stop. ping is a keep-alive; error {error} ends it.
class AnthropicStream : public StreamAssembler {
 public:
  void on_event(const SseEvent& e) override {
    OutsideJson read = read_outside_json(e.data);
    json d = std::move(read.value);
    const std::string type = d.is_object() && d.contains("type") && d["type"].is_string()
                                 ? d["type"].get<std::string>()
                                 : e.event;
    if (type == "ping") return;
    if (!d.is_object()) {
      malformed = "a stream event (" + e.event + ") is not a JSON object" +
                  (read.ok() ? "" : " (" + read.error + ")") + ": " + e.data.substr(0, 200);
      return;
    }
    if (type == "error") {
      error = d;
      const json& err = d.value("error", json::object());
      error_status = status_of_error_type(err.is_object() ? err.value("type", "") : "");
    } else if (type == "message_start") {
      message_ = d.value("message", json::object());
      if (!message_.is_object()) message_ = json::object();
      message_["content"] = json::array();
    } else if (type == "content_block_start") {
      json block = d.value("content_block", json::object());
      if (block.value("type", "") == "tool_use") block["input"] = json::object();
      blocks_[d.value("index", int64_t{0})] = block;
    } else if (type == "content_block_delta") {
      json& block = blocks_[d.value("index", int64_t{0})];
      const json delta = d.value("delta", json::object());
      const std::string kind = delta.value("type", "");
      auto add = [&](const char* field, const char* from) {
        std::string piece = delta.value(from, "");
        block[field] =
            (block.contains(field) && block[field].is_string() ? block[field].get<std::string>()
                                                               : std::string()) +
            piece;
      };
      if (kind == "text_delta") {
        add("text", "text");
      } else if (kind == "thinking_delta") {
        add("thinking", "thinking");
      } else if (kind == "signature_delta") {
        add("signature", "signature");
      } else if (kind == "input_json_delta") {
        partial_json_[d.value("index", int64_t{0})] += delta.value("partial_json", "");
      }
    } else if (type == "message_delta") {
      const json delta = d.value("delta", json::object());
      for (const char* key : {"stop_reason", "stop_sequence"}) {
        if (delta.contains(key)) message_[key] = delta[key];
      }
      if (auto u = d.find("usage"); u != d.end() && u->is_object()) {
        if (!message_.contains("usage") || !message_["usage"].is_object()) {
          message_["usage"] = json::object();
        }
        // The counts message_delta carries replace message_start's; one it sends as null (the
        // SDK's MessageDeltaUsage has every count but output_tokens optional) leaves it.
        for (const auto& [k, v] : u->items()) {
          if (!v.is_null()) message_["usage"][k] = v;
        }
      }
    } else if (type == "message_stop") {
      done = true;
    }
  }

  json body() const override {
    json b = message_.is_object() ? message_ : json::object();
    b["type"] = "message";
    json content = json::array();
    for (const auto& [index, block] : blocks_) {
      json out = block;
      if (auto p = partial_json_.find(index); p != partial_json_.end()) {
        const bool blank = p->second.find_first_not_of(" \t\r\n") == std::string::npos;
        json input = blank ? json::object() : read_outside_json(p->second).value;
        // Input that is not a JSON object stays visible as text (the reply check flags it).
        out["input"] = input.is_object() ? input : json(p->second);
      }
      content.push_back(std::move(out));
    }
    b["content"] = std::move(content);
    return b;
  }

 private:
  json message_ = json::object();
  std::map<int64_t, json> blocks_;
  std::map<int64_t, std::string> partial_json_;
};

}  // namespace

std::unique_ptr<StreamAssembler> AnthropicFormat::stream_assembler() const {
  return std::make_unique<AnthropicStream>();
}

}  // namespace marathon::llm
