// The compact verb: asks for a context compaction by hand.
//
// Without `now` it appends compaction.requested{trigger: manual} (unless one is already pending);
// the runner serves it at its next step (a running run) or when the run is resumed (a stopped
// one), with a model-written summary and the usual fallback. With `now`, on a stopped run only
// (paused or finished), it compacts at once: old tool outputs elided and a structural summary built
// by the runtime from the log (no model call: this process has no model). Both record trigger
// "manual". `marathon compact` and the dashboard's "compact now" both call compact_run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "control/verb_result.h"

namespace marathon::control {

struct CompactResult : VerbResult {
  bool compacted_now = false;  // `now`: the compaction ran here
  std::string outcome;         // compacted | noop | failed (with `now`)
  std::string source;          // elision | structural | ... (with `now`)
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;
};

// Throws StoreError when the run directory or its log cannot be opened (naming it).
CompactResult compact_run(const std::filesystem::path& run_dir, bool now);

}  // namespace marathon::control
