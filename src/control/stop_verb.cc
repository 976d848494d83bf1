#include "control/stop_verb.h"

#include <fmt/format.h>

#include "core/event_store.h"
#include "core/fold.h"
#include "core/load_state.h"
#include "core/run_dir.h"

namespace marathon::control {

VerbResult stop_run(const std::filesystem::path& run_dir, const std::string& reason) {
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

}  // namespace marathon::control
