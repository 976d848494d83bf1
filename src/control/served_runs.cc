#include "control/served_runs.h"

#include <fmt/format.h>

#include "control/control_errors.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "rpc/jsonrpc.h"

namespace marathon::control {

namespace fs = std::filesystem;

EventStore& ServedRun::read_store() {
  if (!reader) {
    reader = EventStore::open(RunDir{dir}.events_db().string(), EventStore::Mode::kReadOnly);
    if (run_id.empty()) run_id = reader->meta("run_id").value_or("");
  }
  return *reader;
}

// What `state` the run is in, as run/list and docs/protocol.md say it.
static std::string run_state(const State& s) {
  return s.done ? "finished" : s.paused ? "paused" : "open";
}

json ServedRun::describe() {
  State s = load_state(read_store());
  return {{"run", name},
          {"dir", dir.string()},
          {"run_id", s.run_id},
          {"state", run_state(s)},
          {"finish_reason", s.finish_reason},
          {"goal", {{"objective", s.goal.objective}, {"status", s.goal.status}}},
          {"best_score", s.best_score ? json(*s.best_score) : json(nullptr)},
          {"events", s.last_seq}};
}

ServedRuns::ServedRuns(const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs) {
    RunDir dir = existing_run_dir(d);  // throws naming d
    ServedRun r;
    r.name = d;
    r.dir = fs::absolute(dir.root).lexically_normal();
    try {
      r.read_store();  // for the run id; a log that cannot be read is reported on use
    } catch (const StoreError&) {
    }
    runs_.push_back(std::move(r));
  }
}

ServedRun& ServedRuns::find(const std::string& key) {
  if (key.empty() && runs_.size() == 1) return runs_.front();
  for (ServedRun& r : runs_) {
    if (r.name == key) return r;
  }
  fs::path as_path = key.empty() ? fs::path() : fs::absolute(key).lexically_normal();
  for (ServedRun& r : runs_) {
    if (!key.empty() && (r.dir == as_path || r.dir == fs::path(key))) return r;
    if (!key.empty() && r.run_id == key) return r;
  }
  json names = json::array();
  for (const ServedRun& r : runs_) names.push_back(r.name);
  throw rpc::RpcError(static_cast<int>(ControlError::kRunNotFound),
                      key.empty() ? "params.run is required: this server serves several runs"
                                  : fmt::format("no served run is \"{}\"", key),
                      json{{"runs", names}});
}

}  // namespace marathon::control
