// fork: a new run whose log is a prefix of an old one, with its blobs and its workspace rebuilt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "core/event.h"
#include "core/events.h"

namespace marathon {

class EventStore;

// Blob hashes an event may reference: every string in its payload that is 64 lowercase hex digits.
std::set<std::string> blob_refs(const Event& e);

// Copies events 1..at_seq of `from` verbatim into the empty log `to`, with every referenced blob
// that `from` holds. Returns the number of blobs copied.
size_t copy_prefix(const EventStore& from, EventStore& to, int64_t at_seq);

struct ForkResult {
  std::string run_id;  // the new run's id (recorded as run.forked)
  std::string from_run_id;
  int64_t at_seq = 0;
  size_t blobs = 0;  // blobs copied
  size_t files = 0;  // workspace files rebuilt
};

// `marathon fork FROM --at SEQ --run-dir TO [--max-tool-calls N ...]`: `budget`'s limits replace
// the original's in the fork (recorded in run.forked). Throws StoreError (bad run dir, SEQ outside
// the log, TO not empty, a missing blob); a failed fork leaves no TO behind.
ForkResult fork_run(const std::filesystem::path& from, int64_t at_seq,
                    const std::filesystem::path& to,
                    const std::optional<events::BudgetSpec>& budget = std::nullopt);

}  // namespace marathon
