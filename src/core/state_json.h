// The complete JSON form of a State, fold's bookkeeping included: what a checkpoint stores.
// Unlike to_json(State) (the status view), it round-trips: state_from_json(state_to_json(s)) == s.
// Its layout belongs to kFoldVersion (core/fold.h): change one, bump the other.
#pragma once

#include "core/state.h"

namespace marathon {

// Throws std::invalid_argument when the state holds a number JSON cannot carry (infinity, NaN).
json state_to_json(const State& s);

// Throws std::invalid_argument naming the field that is missing or of the wrong type.
State state_from_json(json j);

}  // namespace marathon
