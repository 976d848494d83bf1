#include "loop/turn_tracker.h"

#include <fmt/format.h>

#include "core/events.h"

namespace marathon {

std::vector<LoggedToolCall> tool_calls_of(const json& message) {
  std::vector<LoggedToolCall> calls;
  if (!message.is_object() || !message.contains("tool_calls") ||
      !message["tool_calls"].is_array()) {
    return calls;
  }
  size_t i = 0;
  for (const json& c : message["tool_calls"]) {
    LoggedToolCall call;
    call.index = i++;
    if (!c.is_object()) {
      calls.push_back(call);
      continue;
    }
    const json& f = c.contains("function") && c["function"].is_object() ? c["function"] : c;
    call.id = c.value("id", "");
    if (f.contains("name") && f["name"].is_string()) call.name = f["name"].get<std::string>();
    if (f.contains("arguments")) {
      const json& a = f["arguments"];
      call.arguments = a.is_string() ? a.get<std::string>() : a.dump();
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

json normalise_assistant_message(const json& message, int64_t turn) {
  json out = json::object();
  out["role"] = "assistant";
  const json content = message.is_object() ? message.value("content", json()) : json();
  out["content"] = content.is_string() ? content : json("");
  // What a reasoning model said beside its answer, kept as the provider sent it: thinking blocks
  // (sent back with the tool calls they led to), reasoning text and a refusal (for the record).
  if (message.is_object()) {
    if (auto t = message.find("thinking_blocks"); t != message.end() && t->is_array()) {
      out["thinking_blocks"] = *t;
    }
    for (const char* key : {"reasoning_content", "refusal"}) {
      if (auto v = message.find(key); v != message.end() && v->is_string()) out[key] = *v;
    }
  }
  std::vector<LoggedToolCall> calls = tool_calls_of(message);
  if (calls.empty()) return out;
  std::set<std::string> seen;
  json list = json::array();
  for (LoggedToolCall& c : calls) {
    if (c.id.empty() || seen.count(c.id)) c.id = fmt::format("call_{}_{}", turn, c.index);
    seen.insert(c.id);
    list.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
  }
  out["tool_calls"] = std::move(list);
  return out;
}

void TurnTracker::apply(const Event& e) {
  using namespace events;
  if (is<ModelRequest>(e)) {
    request_pending_ = true;
  } else if (is<ModelResponse>(e)) {
    ++responses_;
    auto p = payload_of<ModelResponse>(e);
    if (!p.purpose.empty()) {
      request_pending_ = false;
      return;
    }
    request_pending_ = false;
    finished_since_response_.clear();
    last_calls_ = tool_calls_of(p.message);
    last_error_kind_.clear();
    if (p.error) {
      last_error_kind_ = p.error->kind_text;
      ++consecutive_errors_;
      last_calls_.clear();  // a failed call acts on nothing
      last_stopped_ = false;
      goal_turn_due_ = false;
    } else {
      consecutive_errors_ = 0;
      const bool paused = p.finish_reason == ModelResponse::kFinishPauseTurn;
      last_stopped_ = last_calls_.empty() && !paused;
      goal_turn_due_ = last_stopped_;
    }
  } else if (is<ToolFinished>(e)) {
    finished_since_response_.insert(payload_of<ToolFinished>(e).call_id);
  } else if (is<UserMessage>(e)) {
    if (payload_of<UserMessage>(e).reason == UserMessage::kGoalTurn) {
      goal_turn_due_ = false;
      ++goal_turns_started_;
    }
  }
}

std::vector<LoggedToolCall> TurnTracker::unfinished_calls() const {
  std::vector<LoggedToolCall> out;
  std::multiset<std::string> finished = finished_since_response_;
  for (const LoggedToolCall& c : last_calls_) {
    auto it = finished.find(c.id);
    if (it != finished.end()) {
      finished.erase(it);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace marathon
