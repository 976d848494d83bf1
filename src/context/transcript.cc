#include "context/transcript.h"

#include <algorithm>

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

bool has_tool_calls(const json& m) {
  return m.contains("tool_calls") && m.at("tool_calls").is_array() && !m.at("tool_calls").empty();
}

bool has_thinking(const json& m) {
  auto t = m.find("thinking_blocks");
  return t != m.end() && t->is_array() && !t->empty();
}

// The assistant message of a conversation turn (not a summariser call, not a failed call), or null.
// A paused turn (pause_turn) is kept with thinking alone: it goes back as it is.
const json* conversation_message(const Event& e, events::ModelResponse* p) {
  if (!is<events::ModelResponse>(e)) return nullptr;
  *p = payload_of<events::ModelResponse>(e);
  if (!p->purpose.empty()) return nullptr;  // e.g. a compaction summary
  if (p->error) return nullptr;
  if (!p->message.is_object()) return nullptr;
  const json& m = p->message;
  const bool paused = p->finish_reason == events::ModelResponse::kFinishPauseTurn;
  return has_tool_calls(m) || !str_or_empty(m, "content").empty() || (paused && has_thinking(m))
             ? &m
             : nullptr;
}

void finish(Unit& u) {
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

}  // namespace

size_t first_index_after(const std::vector<Event>& events, int64_t after_seq) {
  auto it = std::upper_bound(events.begin(), events.end(), after_seq,
                             [](int64_t s, const Event& e) { return s < e.seq; });
  return static_cast<size_t>(it - events.begin());
}

void UnitBuilder::add(const Event& e, std::vector<Unit>& out) {
  events::ModelResponse response;
  if (const json* m = conversation_message(e, &response)) {
    assistant(e.seq, *m, response.finish_reason == events::ModelResponse::kFinishPauseTurn, out);
  } else if (is<events::ToolFinished>(e)) {
    tool_result(e.seq, payload_of<events::ToolFinished>(e));
  } else if (is<events::UserMessage>(e)) {
    user(e.seq, payload_of<events::UserMessage>(e), out);
  }
}

void UnitBuilder::assistant(int64_t seq, const json& m, bool paused, std::vector<Unit>& out) {
  close(out);
  json msg{{"role", "assistant"}, {"content", str_or_empty(m, "content")}};
  // Extended thinking: the blocks go back with the tool calls they led to (the provider checks
  // their signatures; providers without thinking drop them).
  if (has_thinking(m)) msg["thinking_blocks"] = m.at("thinking_blocks");
  unit_.paused_turn = paused && !has_tool_calls(m);
  if (has_tool_calls(m)) {
    json calls = json::array();
    for (const json& c : m.at("tool_calls")) {
      calls.push_back(canonical_tool_call(c));
      call_order_.push_back(call_id_of(calls.back()));
    }
    msg["tool_calls"] = std::move(calls);
  }
  open_ = true;
  unit_.first_seq = unit_.last_seq = seq;
  unit_.messages.push_back({seq, std::move(msg), false, ""});
}

void UnitBuilder::tool_result(int64_t seq, events::ToolFinished p) {
  if (!open_) return;
  const std::string& id = p.call_id;
  if (std::find(call_order_.begin(), call_order_.end(), id) == call_order_.end()) return;
  if (results_.count(id)) return;  // a second result for one call: keep the first
  std::string content = std::move(p.output);
  if (p.interrupted && content.empty()) {
    content = "[interrupted: the run stopped while this call was in flight]";
  }
  json msg{{"role", "tool"}, {"tool_call_id", id}, {"content", std::move(content)}};
  results_[id] = TranscriptMessage{seq, std::move(msg), true, p.output_sha};
  unit_.last_seq = std::max(unit_.last_seq, seq);
}

void UnitBuilder::user(int64_t seq, const events::UserMessage& p, std::vector<Unit>& out) {
  close(out);
  json msg{{"role", "user"}, {"content", p.content}};
  Unit u;
  u.first_seq = u.last_seq = seq;
  u.messages.push_back({seq, std::move(msg), false, ""});
  finish(u);
  out.push_back(std::move(u));
}

void UnitBuilder::close_into(Unit unit, const std::vector<std::string>& call_order,
                             std::map<std::string, TranscriptMessage> results,
                             std::vector<Unit>& out) {
  for (const std::string& id : call_order) {
    auto it = results.find(id);
    if (it != results.end()) {
      unit.messages.push_back(std::move(it->second));
    } else {
      json msg{{"role", "tool"},
               {"tool_call_id", id},
               {"content", "[no result recorded for this call]"}};
      unit.messages.push_back({unit.last_seq, std::move(msg), false, ""});
    }
  }
  finish(unit);
  out.push_back(std::move(unit));
}

void UnitBuilder::close(std::vector<Unit>& out) {
  if (!open_) return;
  close_into(std::move(unit_), call_order_, std::move(results_), out);
  reset();
}

bool UnitBuilder::peek_open(Unit* unit) const {
  if (!open_) return false;
  std::vector<Unit> one;
  close_into(unit_, call_order_, results_, one);
  *unit = std::move(one.front());
  return true;
}

void UnitBuilder::reset() {
  unit_ = Unit{};
  call_order_.clear();
  results_.clear();
  open_ = false;
}

std::vector<Unit> build_units(const std::vector<Event>& events, int64_t after_seq) {
  std::vector<Unit> units;
  UnitBuilder b;
  for (size_t i = first_index_after(events, after_seq); i < events.size(); ++i)
    b.add(events[i], units);
  b.close(units);
  return units;
}

std::string assistant_text_for_call(const std::vector<Event>& events, const std::string& call_id) {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (!is<events::ModelResponse>(*it)) continue;
    const json m = payload_of<events::ModelResponse>(*it).message;
    if (!m.is_object()) continue;
    if (!m.contains("tool_calls") || !m.at("tool_calls").is_array()) continue;
    for (const json& c : m.at("tool_calls")) {
      if (call_id_of(canonical_tool_call(c)) == call_id) return str_or_empty(m, "content");
    }
  }
  return "";
}

}  // namespace marathon::context
