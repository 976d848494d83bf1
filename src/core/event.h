// The event envelope: one row of a run's append-only log (docs/event-log.md spells out every type).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace marathon {

using json = nlohmann::json;

enum class Durability { kDurable, kEphemeral };

// An event as stored. `seq` is dense from 1 and is the order of the log; `id` is unique and is the
// idempotency anchor; `causation` is the id of the event that caused this one (empty if none).
struct Event {
  int64_t seq = 0;
  std::string id;
  std::string stream = "run";
  int64_t recorded_at_us = 0;
  std::string type;
  int type_version = 1;
  Durability durability = Durability::kDurable;
  std::string causation;
  json payload = json::object();
};

// An event to append: the store assigns seq, recorded_at_us and (when empty) id.
struct NewEvent {
  std::string type;
  json payload = json::object();
  std::string causation;
  std::string stream = "run";
  int type_version = 1;
  Durability durability = Durability::kDurable;
  std::string id;  // empty: the store generates one
};

std::string to_string(Durability d);
Durability durability_from_string(const std::string& s);  // throws std::invalid_argument

// JSON form of an event (the `marathon log --json` line): all envelope fields plus payload.
json to_json(const Event& e);
Event event_from_json(const json& j);  // throws std::invalid_argument naming the missing field

// Event type names. Never reuse or rename one: old logs must keep folding.
namespace ev {
inline constexpr const char* kRunCreated = "run.created";
inline constexpr const char* kModelRequest = "model.request";
inline constexpr const char* kModelResponse = "model.response";
// A reply whose usage was missing or not believable: what was wrong and the estimate used instead
// (logged just before its model.response; fold reads nothing from it).
inline constexpr const char* kLlmUsageRejected = "llm.usage_rejected";
inline constexpr const char* kToolStarted = "tool.started";
inline constexpr const char* kToolFinished = "tool.finished";
inline constexpr const char* kWorkspaceWritten = "workspace.written";
inline constexpr const char* kEvalFinished = "eval.finished";
inline constexpr const char* kLedgerNoted = "ledger.noted";
inline constexpr const char* kCompactionProposed = "compaction.proposed";
inline constexpr const char* kCompactionInstalled = "compaction.installed";
inline constexpr const char* kCompactionRequested = "compaction.requested";
inline constexpr const char* kGoalChanged = "goal.changed";
inline constexpr const char* kBudgetWarned = "budget.warned";
inline constexpr const char* kRunPaused = "run.paused";
inline constexpr const char* kRunResumed = "run.resumed";
// A client asked the runner to stop (`marathon stop`, the control protocol's run/stop): it pauses
// at its next step with run.paused{stopped}. Void from the next run.resumed on (fold ignores it).
inline constexpr const char* kRunStopRequested = "run.stop_requested";
inline constexpr const char* kRunFinished = "run.finished";
inline constexpr const char* kRunForked = "run.forked";  // first event of a fork after the prefix
// A runner session started with --unsafe-no-sandbox: the model's commands and candidates' code ran
// without the sandbox from here (docs/security.md).
inline constexpr const char* kSandboxDisabled = "sandbox.disabled";
// Executors (src/eval/executor.h, docs/scale-out.md); fold reads nothing from them.
// A Ray job about to be submitted for an evaluation: durable before the submit request, so that a
// resumed runner finds the job by its submission id instead of submitting it again.
inline constexpr const char* kEvalSubmitted = "eval.submitted";
// A Ray job that ended without a result (its worker or node died, it was stopped): retried once
// under a new submission id, then reported as the evaluation's outcome.
inline constexpr const char* kExecutorJobLost = "executor.job_lost";
// A local slot (a GPU) whose evaluations faulted or hung twice in a row: no evaluation is given to
// it again in this runner session.
inline constexpr const char* kExecutorSlotQuarantined = "executor.slot_quarantined";
}  // namespace ev

}  // namespace marathon
