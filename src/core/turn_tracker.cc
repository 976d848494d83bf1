#include "core/turn_tracker.h"

#include <fmt/format.h>

#include <stdexcept>

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
    apply_response(payload_of<ModelResponse>(e));
  } else if (is<ToolFinished>(e)) {
    finished_since_response_.insert(payload_of<ToolFinished>(e).call_id);
  } else if (is<UserMessage>(e)) {
    paused_in_a_row_ = 0;  // a user turn follows: the next paused turn starts a new count
    if (payload_of<UserMessage>(e).reason == UserMessage::kGoalTurn) {
      goal_turn_due_ = false;
      ++goal_turns_started_;
    }
  }
}

void TurnTracker::apply_response(const events::ModelResponse& p) {
  using events::ModelResponse;
  ++responses_;
  request_pending_ = false;
  if (!p.purpose.empty()) return;  // a summariser call: not a conversation turn
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
    paused_in_a_row_ = paused ? paused_in_a_row_ + 1 : 0;
    const bool carry_on = paused && paused_in_a_row_ <= kMaxPausedTurnsInARow;
    last_stopped_ = last_calls_.empty() && !carry_on;
    goal_turn_due_ = last_stopped_;
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

json TurnTracker::to_json() const {
  json calls = json::array();
  for (const LoggedToolCall& c : last_calls_) calls.push_back({c.id, c.name, c.arguments, c.index});
  return json{{"responses", responses_},
              {"request_pending", request_pending_},
              {"last_calls", std::move(calls)},
              {"finished_since_response", finished_since_response_},
              {"last_stopped", last_stopped_},
              {"goal_turn_due", goal_turn_due_},
              {"last_error_kind", last_error_kind_},
              {"consecutive_errors", consecutive_errors_},
              {"paused_in_a_row", paused_in_a_row_},
              {"goal_turns_started", goal_turns_started_}};
}

TurnTracker TurnTracker::from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("turn: not an object");
  TurnTracker t;
  t.responses_ = j.at("responses").get<int64_t>();
  t.request_pending_ = j.at("request_pending").get<bool>();
  for (const json& c : j.at("last_calls")) {
    t.last_calls_.push_back({c.at(0).get<std::string>(), c.at(1).get<std::string>(),
                             c.at(2).get<std::string>(), c.at(3).get<size_t>()});
  }
  for (const json& id : j.at("finished_since_response")) {
    t.finished_since_response_.insert(id.get<std::string>());
  }
  t.last_stopped_ = j.at("last_stopped").get<bool>();
  t.goal_turn_due_ = j.at("goal_turn_due").get<bool>();
  t.last_error_kind_ = j.at("last_error_kind").get<std::string>();
  t.consecutive_errors_ = j.at("consecutive_errors").get<int>();
  t.paused_in_a_row_ = j.at("paused_in_a_row").get<int>();
  t.goal_turns_started_ = j.at("goal_turns_started").get<int64_t>();
  return t;
}

}  // namespace marathon
