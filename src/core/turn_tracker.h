// TurnTracker: what the loop must know about the conversation so far, kept up to date event by
// event. Everything here is derived from the log alone, so a resumed runner decides exactly as the
// one that was killed would have: which tool calls of the last model turn are still to run, whether
// a model request was in flight, whether the policy stopped without finishing (a goal turn is due).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/events.h"

namespace marathon {

// One tool call of a model turn, as the log records it (model.response payload.message.tool_calls).
struct LoggedToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text exactly as the model produced it (may be malformed)
  size_t index = 0;       // position in the response

  bool operator==(const LoggedToolCall&) const = default;
};

// Reads the tool calls of a logged message. Accepts the log's flat form {id, name, arguments} and
// the OpenAI form {id, function{name, arguments}}; arguments given as an object are serialised.
std::vector<LoggedToolCall> tool_calls_of(const json& message);

// Gives every tool call of an assistant message an id unique within it ("call_<turn>_<i>" where
// the model gave none or repeated one) and converts it to the log's flat form. Deterministic.
json normalise_assistant_message(const json& message, int64_t turn);

// A provider that pauses turn after turn (finish reason pause_turn) would be asked again forever,
// stopped only by a budget. After this many paused turns in a row, the next one counts as the
// policy stopping: a goal turn follows, and the goal's turns-without-progress limit bounds the
// rest.
inline constexpr int kMaxPausedTurnsInARow = 8;

class TurnTracker {
 public:
  // Feed every event of the log in order. model.response events with a `purpose` (e.g. a
  // compaction summary) are not model turns.
  void apply(const Event& e);
  // apply() of a model.response, its payload already read (fold reads it once for every part).
  void apply_response(const events::ModelResponse& p);

  int64_t responses() const { return responses_; }  // model.response events so far
  // A model.request with no model.response after it (the request in flight at a kill).
  bool request_pending() const { return request_pending_; }
  // Tool calls of the last model.response without a tool.finished yet, in order.
  std::vector<LoggedToolCall> unfinished_calls() const;
  // The last response carried no tool calls and no error: the policy stopped. Not so for a turn
  // the provider paused (ModelResponse::kFinishPauseTurn): the model is asked again with it, as
  // it is, and carries on (no goal turn), up to kMaxPausedTurnsInARow paused turns in a row.
  bool policy_stopped() const { return last_stopped_; }
  // The policy stopped and no goal turn (user.message, reason goal_turn) has been started since.
  bool goal_turn_due() const { return goal_turn_due_; }
  // The last response reported an error (its kind), if any.
  const std::string& last_error_kind() const { return last_error_kind_; }
  int consecutive_model_errors() const { return consecutive_errors_; }
  int paused_turns_in_a_row() const { return paused_in_a_row_; }
  // The goal turn the next model.request belongs to: 1 + goal turns started (model.request.turn;
  // fold counts turns without progress from it).
  int64_t goal_turn() const { return 1 + goal_turns_started_; }

  bool operator==(const TurnTracker&) const = default;
  // Checkpoint form (State::turn): an object of the fields below.
  json to_json() const;
  // Throws std::invalid_argument (or nlohmann's exceptions) for JSON not of that form.
  static TurnTracker from_json(const json& j);

 private:
  int64_t responses_ = 0;
  bool request_pending_ = false;
  std::vector<LoggedToolCall> last_calls_;
  std::multiset<std::string> finished_since_response_;
  bool last_stopped_ = false;
  bool goal_turn_due_ = false;
  std::string last_error_kind_;
  int consecutive_errors_ = 0;
  int paused_in_a_row_ = 0;
  int64_t goal_turns_started_ = 0;
};

}  // namespace marathon
