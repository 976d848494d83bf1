// The goal verbs a person or a client issues on a run (`marathon goal ...`, the control protocol's
// goal/*): set, edit, pause, resume, clear. Each is one goal.changed event appended to the run's
// log, running or stopped; a running runner reads it at its next step.
#pragma once

#include <string>
#include <vector>

#include "core/event_store.h"
#include "core/state.h"

namespace marathon {

// The verbs, in the order the CLI lists them. (The log also holds auto_pause and done, which only
// the runner writes.)
const std::vector<std::string>& goal_verb_names();
bool is_goal_verb(const std::string& verb);

// What a verb did: the event appended and the state after it, or why nothing was appended.
struct GoalVerbResult {
  enum class Error { kNone, kUnknownVerb, kNeedsText, kNoRun };
  Error error = Error::kNone;
  std::string message;  // the error, naming what is wrong
  Event event;          // the goal.changed appended
  State state;          // the run after it
};

// The goal.changed payload of `verb` on a run whose goal is `goal` (pure). `text` is the objective
// for set and edit (required there) and a progress note for the others (optional). An empty
// payload when the verb is unknown or set/edit lack text.
json goal_changed_payload(const std::string& verb, const std::string& text, const GoalState& goal);

// Appends the verb's goal.changed to `store` (a created run's log, opened for writing).
GoalVerbResult apply_goal_verb(EventStore& store, const std::string& verb, const std::string& text);

}  // namespace marathon
