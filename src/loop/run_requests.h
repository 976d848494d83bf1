// What a person or a client asks of a run from outside its runner, each an event appended to the
// log (SQLite's WAL lets this happen while the runner writes): a compaction (`marathon compact`,
// the control protocol's session/compact) and a stop (`marathon stop`, run/stop). A running runner
// serves them at its next step; a stopped run keeps a compaction request for its next resume.
#pragma once

#include <cstdint>
#include <string>

#include "core/event_store.h"
#include "core/state.h"

namespace marathon {

struct CompactionAsked {
  enum class Error { kNone, kNoRun, kNotStopped };
  Error error = Error::kNone;
  std::string message;        // the error
  int64_t request_seq = 0;    // the compaction.requested pending (appended now or before)
  bool appended = false;      // this call appended it (false: one was already pending)
  bool ran = false;           // `now`: compacted at once
  std::string outcome;        // `now`: compacted | noop | failed
  std::string source;         // `now`: where the summary came from
  int64_t tokens_before = 0;  // `now`: prompt estimates
  int64_t tokens_after = 0;
  State state;  // the run after
};

// Asks for a compaction (compaction.requested{trigger: manual} unless one is pending). With `now`,
// on a stopped run only (paused or finished), compacts at once: old tool outputs elided and a
// structural summary built from the log (no model call). `run_dir` names the run in messages.
CompactionAsked ask_compaction(EventStore& store, bool now, const std::string& run_dir);

struct StopAsked {
  enum class Error { kNone, kNoRun, kFinished };
  Error error = Error::kNone;
  std::string message;  // the error
  Event event;          // the run.stop_requested appended
  bool paused = false;  // the run was already stopped (paused): the request waits for no one
};

// Asks the runner of an open run to stop: appends run.stop_requested{reason}; the runner pauses at
// its next step (run.paused{stopped}) and `marathon resume` carries on. A request made while no
// runner drives the run is void from the next run.resumed on. A finished run is an error.
StopAsked ask_stop(EventStore& store, const std::string& reason);

}  // namespace marathon
