// The stop verb: asks the runner of an open run to stop. It appends run.stop_requested{reason};
// the runner pauses at its next step (run.paused{stopped}) and exits, and `marathon resume`
// carries on. A paused run is left alone (done, nothing appended: seq 0); a finished one cannot
// take it. A request made while no runner drives the run (a killed one) is void from the next
// run.resumed on. On branch 0 of a run with branches (loop/branches.h) it asks every unfinished
// branch. `marathon stop` and the control protocol's run/stop both call stop_run.
#pragma once

#include <filesystem>
#include <string>

#include "control/verb_result.h"

namespace marathon::control {

// Throws StoreError when the run directory or its log cannot be opened (naming it).
VerbResult stop_run(const std::filesystem::path& run_dir, const std::string& reason);

}  // namespace marathon::control
