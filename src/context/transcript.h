// Transcript: the conversation rebuilt from the log. State does not hold messages; the events do:
//   model.response (no `purpose`, no `error`)  -> assistant message (content + tool_calls); one the
//                                                 provider paused (pause_turn) is a unit of its
//                                                 own, marked paused_turn
//   tool.finished                              -> tool message answering its call_id
//   user.message {content, reason}             -> user message (goal turns, budget notes, operator)
// Messages are grouped into units that must stay together for the OpenAI and Anthropic APIs: an
// assistant message with tool calls and the results of those calls, in the order of the calls. A
// call without a logged result (interrupted) gets a one-line placeholder result; a result whose
// call is not in the open unit is dropped. Pure: no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/events.h"

namespace marathon::context {

struct TranscriptMessage {
  int64_t seq = 0;             // the event the message comes from
  json message;                // canonical OpenAI form (policy/policy.h)
  bool tool_output = false;    // a tool message (elidable)
  std::string output_sha;      // blob with the uncapped output, if the tool kept one
  int64_t tokens = 0;          // raw estimate of `message` as it is (token_estimate.h)
  int64_t content_bytes = 0;   // size of the content string
  int64_t content_tokens = 0;  // raw estimate of the content string alone
};

struct Unit {
  int64_t first_seq = 0;
  int64_t last_seq = 0;
  std::vector<TranscriptMessage> messages;
  // An assistant turn without tool calls that the provider paused (ModelResponse::
  // kFinishPauseTurn): while it is the newest unit, the prompt ends with it, as it is, and no
  // live tail follows, so the model carries on from it.
  bool paused_turn = false;
};

// Builds units event by event, so a caller that sees the log grow only feeds it the new events.
// Feeding every event with seq > S and then calling close() gives exactly build_units(events, S).
class UnitBuilder {
 public:
  // One event, in seq order. Closed units are appended to `out` (never reordered or changed).
  void add(const Event& e, std::vector<Unit>& out);
  // Closes the open unit (placeholders for calls without a result) into `out`.
  void close(std::vector<Unit>& out);
  // The open unit as close() would leave it, without closing it; false when no unit is open.
  bool peek_open(Unit* unit) const;
  bool has_open() const { return open_; }
  int64_t open_first_seq() const { return open_ ? unit_.first_seq : 0; }
  // Forgets the open unit (as if the builder had just been created).
  void reset();

 private:
  void assistant(int64_t seq, const json& message, bool paused, std::vector<Unit>& out);
  void tool_result(int64_t seq, events::ToolFinished p);
  void user(int64_t seq, const events::UserMessage& p, std::vector<Unit>& out);
  static void close_into(Unit unit, const std::vector<std::string>& call_order,
                         std::map<std::string, TranscriptMessage> results, std::vector<Unit>& out);

  Unit unit_;
  bool open_ = false;
  std::vector<std::string> call_order_;
  std::map<std::string, TranscriptMessage> results_;
};

// Units built from events with seq > after_seq (events sorted by seq, as the store returns them).
std::vector<Unit> build_units(const std::vector<Event>& events, int64_t after_seq = 0);

// The assistant's words in the turn that issued the tool call `call_id` (the strategy an evaluation
// is recorded under in the ledger). Empty when the call or the text is not found.
std::string assistant_text_for_call(const std::vector<Event>& events, const std::string& call_id);

// Index of the first event with seq > after_seq (binary search; events sorted by seq).
size_t first_index_after(const std::vector<Event>& events, int64_t after_seq);

}  // namespace marathon::context
