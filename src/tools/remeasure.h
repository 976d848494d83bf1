// One re-measurement of a candidate (core/confirmation.h, docs/evaluation.md "Confirmed best"):
// its files as the log recorded them when it was evaluated (State::candidates, from the blobs),
// written to a folder of their own under the run directory, evaluated through the run's executor
// (or in-process) with a seed of their own, and returned as the eval.remeasured payload the
// caller appends. Not a tool: the runner owes it, the model does not ask for it.
#pragma once

#include <cstdint>
#include <string>

#include "core/confirmation.h"
#include "core/event_store.h"
#include "core/state.h"
#include "tools/tool.h"

namespace marathon {

// The seed of re-measurement `index` of `candidate`: a pure function of both, below 2^31 - 10^4
// (the harness adds offsets to it), so a resumed or replayed run asks for the same inputs.
int64_t remeasure_seed(const std::string& candidate, int64_t index);

// Runs the re-measurement `due` of the run whose state is `s`; never throws for anything the
// evaluator does (a failure is an outcome, logged like any other). `ctx` gives the executor, the
// run folder and log_now (an executor's eval.submitted).
events::EvalRemeasured remeasure(const State& s, const RemeasureDue& due, const EventStore& store,
                                 ToolContext& ctx);

}  // namespace marathon
