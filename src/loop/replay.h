// Replay: a new run re-driven from a logged one with zero model calls. The replay policy serves the
// logged model responses; tool results that cannot be reproduced offline (evaluate, profile, run,
// and any call the original reported as interrupted) are taken from the log instead of executed;
// every other tool runs again, so the new log is rebuilt by the loop itself. The final state must
// equal the original's (comparable_state).
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/event_store.h"
#include "loop/runner.h"
#include "policy/replay_policy.h"

namespace marathon {

// Tools whose results the replay takes from the log.
const std::set<std::string>& offline_irreproducible_tools();

// Looks up the logged result of the call (turn, index) of `original`: its tool.finished payload and
// the effect events it caused. Blobs the result references are copied from `from` into `to`.
LoggedResultFn logged_results(std::vector<Event> original, const EventStore& from, EventStore& to);

// The original's re-measurements (eval.remeasured) by candidate and index: a replay serves each
// from here instead of running the evaluator again.
std::function<std::optional<events::EvalRemeasured>(const RemeasureDue&)> logged_remeasurements(
    const std::vector<Event>& original);

// Creates the replay run in `to_dir`: run.created copied from the original (new run_id, with
// `replay_of`), the starter workspace.written events and every blob the original references.
// Returns the new store; `original` receives the original's events.
std::unique_ptr<EventStore> create_replay_run(const std::filesystem::path& from_dir,
                                              const std::filesystem::path& to_dir,
                                              std::vector<Event>* original,
                                              std::unique_ptr<EventStore>* from_store);

// What others appended to the original while its runner ran (a manual compaction request, goal
// verbs, a stop request), each with the number of the runner's steps done before it: model.request
// and tool.finished events (the runner takes such an event into account at its next step).
struct ExternalEvent {
  int64_t after_steps = 0;
  NewEvent event;
};
std::vector<ExternalEvent> external_events(const std::vector<Event>& original);

// A RunnerHooks::between_steps (and ReplayPolicy on_ask) for the replay in `to`: appends each of
// `external` once the replay has done as many steps as the original had before it, so the replay's
// runner meets it at the same point (a step boundary, or during the model call it came in).
std::function<void()> replay_external_events(std::vector<ExternalEvent> external, EventStore& to);

// Drives the replay run `store` in `to_dir` (made by create_replay_run) to its end: the logged
// responses (`policy`, each purpose from its own queue), the logged results of irreproducible
// tools, the original's external events at the steps they came, and a `run.resumed` wherever the
// replay pauses as often as the original was resumed. The final state goes to *final_state.
RunReport drive_replay(EventStore& store, const std::filesystem::path& to_dir,
                       const std::vector<Event>& original, const EventStore& from,
                       ReplayPolicy& policy, bool quiet, State* final_state);

// The state without what legitimately differs between two runs of the same history: run id,
// seqs, event counts and timings, wall time. Two runs that did the same work compare equal.
json comparable_state(const State& s);

}  // namespace marathon
