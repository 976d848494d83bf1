// Fold checkpoints: the folded State stored in the log at a seq, so that opening a long log reads
// the newest checkpoint and folds only the events after it (docs/event-log.md, "Checkpoints").
// A checkpoint is derived data: a missing, stale (another kFoldVersion) or damaged one is passed
// over and the events are folded instead; it never changes what load_state returns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/event_store.h"
#include "core/state.h"

namespace marathon {

inline constexpr int64_t kCheckpointEvery = 1000;  // events between checkpoints (the runner's)
inline constexpr int kCheckpointsKept = 2;  // the newest two: one may be damaged, one is left

// For writers: stores a checkpoint of `state` when a multiple of every_n_events lies in
// (newest checkpoint of this fold version, state.last_seq], i.e. about every every_n_events events.
// `state` must be fold() of this log's events 1..state.last_seq, as a runner's folded state is. One
// transaction; returns true when one was written. Never throws: a failure is logged and the log is
// as it was.
bool maybe_write_checkpoint(EventStore& store, const State& state,
                            int64_t every_n_events = kCheckpointEvery);

// Stores a checkpoint of `state` now. Throws StoreError (or std::invalid_argument for a state
// JSON cannot hold).
void write_checkpoint(EventStore& store, const State& state);

// The newest checkpoint of kFoldVersion with seq <= max_seq that passes every check (its checksum,
// the id of the event at its seq, its JSON, and that it is the state at that seq). Each one
// passed over is logged and, when `rejected` is given, described there.
std::optional<State> read_checkpoint(const EventStore& store, int64_t max_seq,
                                     std::vector<std::string>* rejected = nullptr);

}  // namespace marathon
