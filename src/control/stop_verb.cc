#include "control/stop_verb.h"

#include <fmt/format.h>

#include "core/event_store.h"
#include "core/fold.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "loop/branches.h"

namespace marathon::control {
namespace {

VerbResult stop_one(const std::filesystem::path& run_dir, const std::string& reason) {
  RunDir dir = existing_run_dir(run_dir);
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kOpen);
  VerbResult r;
  r.state = load_state(*store);
  if (!r.state.created) {
    r.status = VerbStatus::kNoRun;
    r.message = fmt::format("{}: the log holds no run", store->path());
    return r;
  }
  if (r.state.done) {
    r.status = VerbStatus::kWrongState;
    r.message = fmt::format("{}: the run has finished ({}); there is nothing to stop",
                            run_dir.string(), r.state.finish_reason);
    return r;
  }
  if (r.state.paused) return r;  // already stopped: nothing to ask
  Event e = store->append(make_event(events::RunStopRequested{reason}));
  apply(r.state, e);
  r.seq = e.seq;
  return r;
}

}  // namespace

VerbResult stop_run(const std::filesystem::path& run_dir, const std::string& reason) {
  VerbResult r = stop_one(run_dir, reason);
  const int k = branch_count(r.state);
  if (r.status == VerbStatus::kNoRun || k == 1 || r.state.config.value("branch", 0) != 0) {
    return r;
  }
  // Branch 0 of a run with branches stands for the run: every branch is asked to stop, and the
  // verb is done when any branch had something to stop (a finished branch is left alone).
  bool any_unfinished = r.status == VerbStatus::kDone;
  for (int i = 1; i < k; ++i) {
    VerbResult b = stop_one(branch_dir(run_dir, i), reason);
    if (b.status != VerbStatus::kDone) continue;
    any_unfinished = true;
    if (b.seq) r.branches_asked.push_back(i);
  }
  if (any_unfinished && r.status != VerbStatus::kDone) {
    r.status = VerbStatus::kDone;  // branch 0 finished, others still run
    r.message.clear();
  }
  return r;
}

}  // namespace marathon::control
