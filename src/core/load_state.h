// Folding a stored log: State from an EventStore, streaming (events are not all held at once).
#pragma once

#include <cstdint>

#include "core/event_store.h"
#include "core/fold.h"

namespace marathon {

// fold() over the store's events with seq <= to_seq. A payload fold() rejects becomes a StoreError
// naming the file.
State load_state(const EventStore& store, int64_t to_seq = INT64_MAX);

}  // namespace marathon
