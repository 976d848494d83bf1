// The deterministic workload of the SIGKILL crash test. What is appended at each seq depends only
// on (seed, seq), so the test can check every stored event against what the writer meant to write.
// The log is a sequence of units; each unit starts at a seq and is one of:
//   single      one append (run.created at seq 1, else a model.response)
//   blob_write  put_blob, then one workspace.written append naming it
//   tool_pair   tool.started and tool.finished, two separate appends (a crash may fall between)
//   batch       2..6 events in one append_batch (all or none may be visible)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/event_store.h"

namespace crashtest {

enum class UnitKind { kSingle, kBlobWrite, kToolPair, kBatch };

struct Unit {
  UnitKind kind;
  int events;
};

Unit unit_at(uint64_t seed, int64_t start_seq);

// The events of the unit that starts at start_seq, and (for blob_write) the blob's bytes.
std::vector<marathon::NewEvent> unit_events(uint64_t seed, int64_t start_seq, std::string* blob);

// True when a log of last_seq events does not end inside a batch.
bool may_end_at(uint64_t seed, int64_t last_seq);

// Digest of an event's full JSON form (envelope and payload), for the acknowledgements.
uint64_t digest(const marathon::Event& e);

// Appends units to the store forever, starting after its last event; calls ack(seq, digest) for
// every event once the append that stored it has returned.
[[noreturn]] void run_writer(marathon::EventStore& store, uint64_t seed,
                             const std::function<void(int64_t, uint64_t)>& ack);

}  // namespace crashtest
