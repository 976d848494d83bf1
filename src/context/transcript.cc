#include "context/transcript.h"

#include <algorithm>
#include <map>

#include "context/token_estimate.h"

namespace marathon::context {
namespace {

const std::string& str_or_empty(const json& obj, const char* key) {
  static const std::string kEmpty;
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return kEmpty;
  return it->get_ref<const std::string&>();
}

// The log stores tool calls flat ({id, name, arguments}); the canonical form nests a function.
json canonical_tool_call(const json& call) {
  if (call.contains("function")) return call;
  json args = call.contains("arguments") ? call.at("arguments") : json("{}");
  if (!args.is_string()) args = args.dump();
  return json{{"id", str_or_empty(call, "id")},
              {"type", "function"},
              {"function", {{"name", str_or_empty(call, "name")}, {"arguments", args}}}};
}

std::string call_id_of(const json& canonical_call) { return str_or_empty(canonical_call, "id"); }

bool is_conversation_response(const Event& e) {
  if (e.type != ev::kModelResponse) return false;
  const json& p = e.payload;
  if (p.contains("purpose")) return false;  // e.g. a compaction summary
  if (p.contains("error") && !p.at("error").is_null()) return false;
  if (!p.contains("message") || !p.at("message").is_object()) return false;
  const json& m = p.at("message");
  bool has_calls =
      m.contains("tool_calls") && m.at("tool_calls").is_array() && !m.at("tool_calls").empty();
  return has_calls || !str_or_empty(m, "content").empty();
}

class UnitBuilder {
 public:
  explicit UnitBuilder(std::vector<Unit>& out) : out_(out) {}

  void assistant(const Event& e) {
    close();
    const json& m = e.payload.at("message");
    json msg{{"role", "assistant"}, {"content", str_or_empty(m, "content")}};
    if (m.contains("tool_calls") && m.at("tool_calls").is_array() && !m.at("tool_calls").empty()) {
      json calls = json::array();
      for (const json& c : m.at("tool_calls")) {
        calls.push_back(canonical_tool_call(c));
        call_order_.push_back(call_id_of(calls.back()));
      }
      msg["tool_calls"] = std::move(calls);
    }
    open_ = true;
    unit_.first_seq = unit_.last_seq = e.seq;
    unit_.messages.push_back({e.seq, std::move(msg), false, ""});
  }

  void tool_result(const Event& e) {
    if (!open_) return;
    const std::string& id = str_or_empty(e.payload, "call_id");
    if (std::find(call_order_.begin(), call_order_.end(), id) == call_order_.end()) return;
    if (results_.count(id)) return;  // a second result for one call: keep the first
    std::string content = str_or_empty(e.payload, "output");
    if (e.payload.value("interrupted", false) && content.empty()) {
      content = "[interrupted: the run stopped while this call was in flight]";
    }
    json msg{{"role", "tool"}, {"tool_call_id", id}, {"content", std::move(content)}};
    results_[id] =
        TranscriptMessage{e.seq, std::move(msg), true, str_or_empty(e.payload, "output_sha")};
    unit_.last_seq = std::max(unit_.last_seq, e.seq);
  }

  void user(const Event& e) {
    close();
    json msg{{"role", "user"}, {"content", str_or_empty(e.payload, "content")}};
    Unit u;
    u.first_seq = u.last_seq = e.seq;
    u.messages.push_back({e.seq, std::move(msg), false, ""});
    finish(u);
    out_.push_back(std::move(u));
  }

  void close() {
    if (!open_) return;
    for (const std::string& id : call_order_) {
      auto it = results_.find(id);
      if (it != results_.end()) {
        unit_.messages.push_back(std::move(it->second));
      } else {
        json msg{{"role", "tool"},
                 {"tool_call_id", id},
                 {"content", "[no result recorded for this call]"}};
        unit_.messages.push_back({unit_.last_seq, std::move(msg), false, ""});
      }
    }
    finish(unit_);
    out_.push_back(std::move(unit_));
    unit_ = Unit{};
    call_order_.clear();
    results_.clear();
    open_ = false;
  }

 private:
  static void finish(Unit& u) {
    for (TranscriptMessage& m : u.messages) {
      m.tokens = estimate_message_tokens(m.message);
      const json& c = m.message["content"];
      if (c.is_string()) {
        const std::string& text = c.get_ref<const std::string&>();
        m.content_bytes = static_cast<int64_t>(text.size());
        m.content_tokens = estimate_text_tokens(text);
      }
    }
  }

  std::vector<Unit>& out_;
  Unit unit_;
  bool open_ = false;
  std::vector<std::string> call_order_;
  std::map<std::string, TranscriptMessage> results_;
};

}  // namespace

size_t first_index_after(const std::vector<Event>& events, int64_t after_seq) {
  auto it = std::upper_bound(events.begin(), events.end(), after_seq,
                             [](int64_t s, const Event& e) { return s < e.seq; });
  return static_cast<size_t>(it - events.begin());
}

std::vector<Unit> build_units(const std::vector<Event>& events, int64_t after_seq) {
  std::vector<Unit> units;
  UnitBuilder b(units);
  for (size_t i = first_index_after(events, after_seq); i < events.size(); ++i) {
    const Event& e = events[i];
    if (is_conversation_response(e)) {
      b.assistant(e);
    } else if (e.type == ev::kToolFinished) {
      b.tool_result(e);
    } else if (e.type == kUserMessage) {
      b.user(e);
    }
  }
  b.close();
  return units;
}

std::string assistant_text_for_call(const std::vector<Event>& events, const std::string& call_id) {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->type != ev::kModelResponse) continue;
    const json& m = it->payload.value("message", json::object());
    if (!m.contains("tool_calls") || !m.at("tool_calls").is_array()) continue;
    for (const json& c : m.at("tool_calls")) {
      if (call_id_of(canonical_tool_call(c)) == call_id) return str_or_empty(m, "content");
    }
  }
  return "";
}

}  // namespace marathon::context
