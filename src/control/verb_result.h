// What a control verb did: done, or refused with the reason. The CLI turns it into an exit code
// and the dashboard into an HTTP status, so both report the same refusals for the same input.
#pragma once

#include <string>
#include <vector>

#include "core/state.h"

namespace marathon::control {

enum class VerbStatus {
  kDone,        // the event was appended (or the request was already pending)
  kBadInput,    // the request itself is wrong (a missing objective, an unknown verb)
  kWrongState,  // the run cannot take it now (compact --now on a running run)
  kNoRun,       // the log holds no run.created
};

struct VerbResult {
  VerbStatus status = VerbStatus::kDone;
  std::string message;  // why it was refused (empty when done)
  State state;          // the run's state after the verb (before it, when refused)
  int64_t seq = 0;      // the seq of the event the verb appended (0: none)
  // A verb on a run with branches that also acted on other branches (their indexes).
  std::vector<int> branches_asked;
};

// The exit code of a CLI verb: 0 done, 2 bad input or wrong state, 1 no run.
int exit_code_of(VerbStatus s);

}  // namespace marathon::control
