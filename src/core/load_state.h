// Folding a stored log: State from an EventStore, streaming (events are not all held at once).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/event_store.h"
#include "core/fold.h"

namespace marathon {

struct LoadOptions {
  // Start from the newest valid checkpoint (core/checkpoint.h) and fold only the events after it.
  // false: fold every event, verifying every row's checksum.
  bool use_checkpoints = true;
  // Called after each event is applied, with the state that includes it (the dashboard's series
  // are read this way, from the one fold). Only the events folded here are seen: those after the
  // checkpoint when one is used. Payloads lack the fields fold never reads (load_state.cc).
  std::function<void(const Event&, const State&)> observe;
};

struct LoadStats {             // what a load did (benchmarks, tests, `status --verbose`)
  int64_t checkpoint_seq = 0;  // the checkpoint it started from; 0: none
  int64_t events_folded = 0;   // events read and applied after it
  std::vector<std::string> rejected_checkpoints;  // checkpoints passed over, and why
};

// fold() over the store's events with seq <= to_seq: the same State whether or not a checkpoint
// was used. A payload fold() rejects becomes a StoreError naming the file.
State load_state(const EventStore& store, int64_t to_seq = INT64_MAX, const LoadOptions& = {},
                 LoadStats* stats = nullptr);

}  // namespace marathon
