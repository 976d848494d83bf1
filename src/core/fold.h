// fold: State as a pure function of the log. No I/O, no clock: the same events give the same State.
#pragma once

#include <vector>

#include "core/event.h"
#include "core/state.h"

namespace marathon {

// The version of fold()'s meaning and of State's checkpoint form (core/state_json.h). Bump it when
// apply() treats any event differently or State gains, loses or changes a field: checkpoints of
// another version are then ignored (the log is folded from its first event instead).
inline constexpr int kFoldVersion = 8;

// Applies one event to the state. Unknown event types are ignored (forward compatible within a
// schema version); a known type with a malformed payload throws std::invalid_argument naming the
// seq, type and field.
void apply(State& s, const Event& e);

State fold(const std::vector<Event>& events);

}  // namespace marathon
