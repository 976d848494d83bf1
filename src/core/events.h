// Every event type of the log: its stable name, its payload version and its payload as a struct,
// with the JSON conversions (nlohmann's to_json/from_json). Producers build these structs and
// consumers read them; no other file spells a type name or a payload field. docs/event-log.md
// lists the same table.
//
// Reading is tolerant of members it does not know (a newer writer, fields kept for humans) and
// strict on the ones it needs: a required field missing, or any known field of the wrong type,
// throws PayloadError naming the event type and the field. Optional fields default as the
// comments say, which is how logs written before a field existed keep folding.
//
// Names are never reused or renamed; a payload change that old readers would misread gets a new
// version (kVersion) and the reader keeps accepting the old shapes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/event.h"

namespace marathon {

// ---- Enumerations stored in payloads as strings -------------------------------------------------

// Which way the goal metric improves.
enum class Direction { kMax, kMin };
std::string to_string(Direction d);                            // "max" | "min"
Direction direction_from_string(std::string_view s);           // throws std::invalid_argument
std::optional<Direction> parse_direction(std::string_view s);  // nullopt unless "max" | "min"

enum class GoalStatus { kActive, kPaused, kCleared, kDone };
std::string to_string(GoalStatus s);                     // active | paused | cleared | done
GoalStatus goal_status_from_string(std::string_view s);  // throws std::invalid_argument

// What a goal verb (goal.changed) does.
enum class GoalVerb { kSet, kEdit, kPause, kResume, kClear, kAutoPause, kDone };
std::string to_string(GoalVerb v);  // set | edit | pause | resume | clear | auto_pause | done
GoalVerb goal_verb_from_string(std::string_view s);  // throws std::invalid_argument
// The status a verb sets (nullopt for edit, which keeps it).
std::optional<GoalStatus> status_after(GoalVerb v);

// A ledger entry: an evaluation (fold records one per eval.finished) or a note of the model's
// (ledger.noted, the note tool).
enum class LedgerKind { kAttempt, kStrategy, kFinding, kDeadEnd };
std::string to_string(LedgerKind k);                     // attempt | strategy | finding | dead_end
LedgerKind ledger_kind_from_string(std::string_view s);  // throws std::invalid_argument

// The outcome of one evaluator run (docs/evaluation.md "Outcomes").
enum class EvalStatus { kOk, kInvalidOutput, kNonzeroExit, kTimeout, kCrash };
std::string to_string(EvalStatus s);  // ok | invalid_output | nonzero_exit | timeout | crash
EvalStatus eval_status_from_string(std::string_view s);  // throws std::invalid_argument

// Why a model call failed (model.response `error.kind`). kUnknown reads a kind this binary does
// not know (a newer writer); it is never written.
enum class LlmErrorKind {
  kContextLength,         // the prompt does not fit the model's window
  kAuth,                  // 401 / 403
  kNotFound,              // 404: wrong base URL or unknown model
  kMalformed,             // the reply is not what the format promises
  kTransport,             // connection refused, timeout, 5xx after every retry
  kRateLimitedExhausted,  // still 429 after every retry
  kBadRequest,            // any other 4xx
  kReplayExhausted,       // the replay policy has no logged response left
  kUnavailable,           // no summariser configured
  kException,             // the policy threw
  kInterrupted,           // the caller asked to stop (SIGINT/SIGTERM) during the call; never logged
  kUnknown,
};
std::string to_string(LlmErrorKind k);
LlmErrorKind llm_error_kind_from_string(std::string_view s);  // unknown text: kUnknown
// Errors after which asking the model again cannot help (the run stops).
bool is_permanent(LlmErrorKind k);

enum class CompactionOutcome { kCompacted, kNoop, kFailed };
std::string to_string(CompactionOutcome o);                            // compacted | noop | failed
CompactionOutcome compaction_outcome_from_string(std::string_view s);  // throws

// In JSON each enumeration is its name (json(Direction::kMin) is "min"), never its number; reading
// an unknown name throws std::invalid_argument (LlmErrorKind reads it as kUnknown).
#define MARATHON_ENUM_JSON(E) \
  void to_json(json& j, E v); \
  void from_json(const json& j, E& v);
MARATHON_ENUM_JSON(Direction)
MARATHON_ENUM_JSON(GoalStatus)
MARATHON_ENUM_JSON(GoalVerb)
MARATHON_ENUM_JSON(LedgerKind)
MARATHON_ENUM_JSON(EvalStatus)
MARATHON_ENUM_JSON(LlmErrorKind)
MARATHON_ENUM_JSON(CompactionOutcome)
#undef MARATHON_ENUM_JSON

// The one definition of "better" and "target met" for a direction.
bool improves(Direction d, double score, std::optional<double> best);
bool target_met(Direction d, std::optional<double> best, std::optional<double> target);
// A sort key that puts better scores first (ascending): the score for min, its negation for max.
double better_first_key(Direction d, double score);

// ---- Errors -----------------------------------------------------------------------------------

// A payload that does not match its type: `field` is the path of the offending field
// ("goal.direction"), what() reads "<type>: field '<field>' <problem>".
class PayloadError : public std::invalid_argument {
 public:
  PayloadError(std::string type, std::string field, std::string problem);
  const std::string& type() const { return type_; }
  const std::string& field() const { return field_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string type_, field_, problem_;
};

namespace events {

// ---- Shared parts -----------------------------------------------------------------------------

struct GoalSpec {
  std::string objective;
  std::string metric;
  Direction direction = Direction::kMax;  // absent: max
  std::optional<double> target;
  bool operator==(const GoalSpec&) const = default;
};

struct BudgetSpec {  // each absent: the default limit (State's BudgetLimits)
  std::optional<int64_t> max_tool_calls;
  std::optional<double> max_wall_s;
  std::optional<int64_t> max_tokens;
  std::optional<double> max_cost_usd;
  std::optional<double> max_gpu_s;
  bool operator==(const BudgetSpec&) const = default;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  // Of prompt_tokens, those the provider read from or wrote to its prompt cache (model.response
  // only; written when > 0, absent: 0).
  int64_t cache_read_tokens = 0;
  int64_t cache_write_tokens = 0;
  bool operator==(const Usage&) const = default;
};

// model.response `error`: kind and message, the HTTP status and attempts of a provider call, and
// whatever else a writer recorded, kept verbatim in `extra`.
struct ModelError {
  LlmErrorKind kind = LlmErrorKind::kUnknown;
  std::string kind_text;  // as logged (equals to_string(kind) unless kind is kUnknown)
  std::string message;
  std::optional<int64_t> http_status;  // 0: no HTTP response arrived
  std::optional<int64_t> attempts;
  json extra = json::object();
  static ModelError make(LlmErrorKind kind, std::string message);
  bool operator==(const ModelError&) const = default;
};

// The fields every compaction.* event (and a summariser's model.response) carries.
struct CompactionScope {
  std::string trigger;  // auto | manual
  std::string reason;   // soft_threshold | manual_request | context_length_error | resume
  int64_t summarized_through = 0;
  int64_t elided_through = 0;
  int64_t tokens_before = 0;
  bool operator==(const CompactionScope&) const = default;
};

struct ReplayOf {  // the run a replay reproduces
  std::string run_id;
  std::string run_dir;
  bool operator==(const ReplayOf&) const = default;
};

// ---- The event types --------------------------------------------------------------------------

struct RunCreated {
  static constexpr const char* kType = "run.created";
  static constexpr int kVersion = 1;
  std::string run_id;                   // required
  json task = json::object();           // the task spec (TaskSpec's JSON)
  std::optional<std::string> task_dir;  // absolute task folder
  std::optional<GoalSpec> goal;
  std::optional<BudgetSpec> budget;
  json config = json::object();  // policy, model, base_url, context_window, ...
  std::optional<ReplayOf> replay_of;
};

struct ModelRequest {
  static constexpr const char* kType = "model.request";
  static constexpr int kVersion = 1;
  std::optional<int64_t> turn;  // goal turn; absent: a new one
  std::string prompt_sha;       // sha256 of the prompt (docs/context.md)
  int64_t n_messages = 0;
  int64_t tokens_estimate = 0;
};

struct ModelResponse {
  static constexpr const char* kType = "model.response";
  static constexpr int kVersion = 1;
  // A summariser call (not a conversation turn) has purpose "compaction" and a scope.
  static constexpr const char* kPurposeCompaction = "compaction";
  // finish_reason of a turn the provider paused (Anthropic stop_reason pause_turn): the loop sends
  // the message back as it is, last in the next request, and the model carries on from it.
  static constexpr const char* kFinishPauseTurn = "pause_turn";

  // {content, tool_calls[{id, name, arguments}], thinking_blocks?, reasoning_content?, refusal?}
  // (the canonical assistant message, policy/policy.h); null when left out (fold).
  json message;
  Usage usage;
  double cost_usd = 0;
  std::string provider;
  std::string model;
  std::string finish_reason;
  std::optional<ModelError> error;
  json problems;                         // [{tool_call_id, kind, message}] or null
  std::string purpose;                   // "" for a conversation turn
  std::optional<CompactionScope> scope;  // with purpose compaction
  // The usage above is the runtime's estimate (an llm.usage_rejected event precedes this one).
  bool usage_estimated = false;
};

// A reply whose usage was missing or not believable: what was wrong and the estimate used
// instead. Logged just before its model.response; fold reads nothing from it.
struct LlmUsageRejected {
  static constexpr const char* kType = "llm.usage_rejected";
  static constexpr int kVersion = 1;
  std::vector<std::string> problems;  // one line per field ("usage.prompt_tokens = -5: negative")
  json reported;                      // the usage object as the provider sent it, or null
  Usage estimated;
  std::string provider;
  std::string model;
  std::string purpose;  // the model.response's ("" for a conversation turn)
};

struct ToolStarted {
  static constexpr const char* kType = "tool.started";
  static constexpr int kVersion = 1;
  std::string call_id;  // required
  std::string name;     // required
  json arguments;       // the parsed arguments (or the raw text when invalid); null when left out
  std::optional<int64_t> turn;                // model.response count when the call was made
  std::optional<int64_t> index;               // the call's place in its response
  std::string source;                         // "" for the model's calls, kMcp for a client's
  static constexpr const char* kMcp = "mcp";  // made through `marathon mcp`
};

struct ToolFinished {
  static constexpr const char* kType = "tool.finished";
  static constexpr int kVersion = 1;
  std::string call_id;  // required
  std::string name;
  bool ok = false;
  std::string output;      // capped text ("" when left out)
  std::string output_sha;  // blob of the full output when it was capped ("": none)
  double elapsed_s = 0;
  std::optional<double> gpu_s;  // GPU seconds outside any evaluation it logged
  bool interrupted = false;     // in flight at a crash and not re-run
  // A call of the last turn that the run ended before (budget, target): it used nothing and does
  // not count as a tool call.
  bool not_run = false;
};

struct WorkspaceWritten {
  static constexpr const char* kType = "workspace.written";
  static constexpr int kVersion = 1;
  std::string path;  // required
  std::string sha;   // required unless deleted
  int64_t size = 0;
  bool deleted = false;
  std::string source;                                 // one of the below, or "" (a file tool)
  static constexpr const char* kStarter = "starter";  // the task's starter files, at creation
  static constexpr const char* kSync = "sync";        // changed on disk behind the log's back
  static constexpr const char* kRevert = "revert";    // the revert tool
};

// Which executor ran an evaluation (src/eval/executor.h) and where.
struct ExecutorRef {
  std::string name;   // "local" | "ray://HOST:PORT"
  std::string where;  // the local slot ("gpu0", "cpu1") or the Ray submission id
  std::string node;   // Ray: the node the job ran on (its IP; "" when unknown)
  bool operator==(const ExecutorRef&) const = default;
};

struct EvalFinished {
  static constexpr const char* kType = "eval.finished";
  static constexpr int kVersion = 1;
  std::string candidate;  // required: candidate hash
  std::string cache_key;
  bool cached = false;
  // With cached: the result is another branch's of the same run (loop/branches.h), not this log's.
  bool shared = false;
  EvalStatus status = EvalStatus::kOk;
  json result = json::object();  // the evaluator's object as recorded (core/eval_result.h reads it)
  double elapsed_s = 0;
  double gpu_s = 0;
  std::string strategy;
  std::optional<ExecutorRef> executor;  // absent when cached or run in-process without one
};

// One more evaluation of a candidate that was already evaluated, on fresh inputs (its own seed),
// so that the figure announced for it is a median over draws rather than the one draw that made it
// look best (docs/evaluation.md, "Confirmed best"). Run by the runner, not a tool: `phase` says why
// (kBest: its first draw would have become the run's best; kFinal: the top few at the run's end).
// Each is durable before the next begins; a resumed or replayed run serves those done from the log.
struct EvalRemeasured {
  static constexpr const char* kType = "eval.remeasured";
  static constexpr int kVersion = 1;
  static constexpr const char* kBest = "best";
  static constexpr const char* kFinal = "final";
  std::string candidate;  // required: candidate hash
  std::string cache_key;  // the candidate's first evaluation's
  int64_t index = 0;      // 0-based: which re-measurement of this candidate
  std::string phase = kBest;
  int64_t seed = 0;  // MARATHON_EVAL_SEED the evaluator was given
  EvalStatus status = EvalStatus::kOk;
  json result = json::object();  // the evaluator's object as recorded (core/eval_result.h reads it)
  double elapsed_s = 0;
  double gpu_s = 0;
  std::optional<ExecutorRef> executor;
};

// A Ray job about to be submitted for an evaluation (src/eval/ray_executor.h): durable before the
// submit request, so that a resumed runner finds the job by its submission id instead of
// submitting it again. Fold reads nothing from it.
struct EvalSubmitted {
  static constexpr const char* kType = "eval.submitted";
  static constexpr int kVersion = 1;
  std::string executor;       // "ray://HOST:PORT"
  std::string submission_id;  // required
  int64_t attempt = 0;        // 0, then 1 for the one retry
  std::string cache_key;
  std::string candidate;
  std::string entrypoint;  // the command the job runs on its worker
  int64_t num_gpus = 0;
};

// A Ray job that ended without a result (its worker or node died, it was stopped): retried once
// under a new submission id, then reported as the evaluation's outcome. Fold reads nothing.
struct ExecutorJobLost {
  static constexpr const char* kType = "executor.job_lost";
  static constexpr int kVersion = 1;
  std::string executor;
  std::string submission_id;  // required
  int64_t attempt = 0;
  std::string reason;
  std::string logs_tail;             // the end of the job's logs ("" when none could be read)
  std::optional<std::string> retry;  // the next attempt's submission id; null: given up
  std::string node;                  // the node it was lost on ("" when unknown)
  std::string retry_node;  // the node the retry is pinned to ("": any node; none other is alive)
};

// A local slot (a GPU) whose evaluations faulted or hung twice in a row: no evaluation is given to
// it again in this runner session (src/eval/local_executor.h). Fold reads nothing.
struct ExecutorSlotQuarantined {
  static constexpr const char* kType = "executor.slot_quarantined";
  static constexpr int kVersion = 1;
  std::string executor = "local";
  std::string slot;  // required: "gpu0", "cpu1", ...
  int64_t faults_in_a_row = 0;
  EvalStatus last_status = EvalStatus::kCrash;
  int64_t healthy_slots = 0;  // the slots still given evaluations
};

struct LedgerNoted {
  static constexpr const char* kType = "ledger.noted";
  static constexpr int kVersion = 1;
  LedgerKind kind = LedgerKind::kFinding;  // required: strategy | finding | dead_end
  std::string text;                        // required
  // A copy of another branch's note (loop/branches.h): that branch and the note's seq in its log.
  std::optional<int64_t> from_branch;
  std::optional<int64_t> from_seq;
};

// Another branch's candidate made known to this branch (loop/branches.h): its files (path -> blob
// sha; the blobs are copied into this log's store first), so that `revert` can fork this branch's
// workspace from it. Written when a branch reaches the run's best.
struct CandidateImported {
  static constexpr const char* kType = "candidate.imported";
  static constexpr int kVersion = 1;
  std::string candidate;                     // required: the candidate hash
  std::map<std::string, std::string> files;  // required
  int64_t from_branch = 0;
  std::optional<double> score;
};

struct CompactionRequested {
  static constexpr const char* kType = "compaction.requested";
  static constexpr int kVersion = 1;
  std::string trigger = "manual";
};

struct CompactionProposed {
  static constexpr const char* kType = "compaction.proposed";
  static constexpr int kVersion = 1;
  CompactionScope scope;
  std::string source;       // model
  std::string summary_sha;  // the proposed summary's blob ("": none)
  std::string error;        // why there is none
};

struct CompactionInstalled {
  static constexpr const char* kType = "compaction.installed";
  static constexpr int kVersion = 1;
  CompactionScope scope;
  CompactionOutcome outcome = CompactionOutcome::kCompacted;  // required
  std::string summary;                                        // required when compacted
  std::string source;                                         // model | structural | elision | none
  int64_t tokens_after = 0;
  std::string rejected;  // why the model's summary was not used
  std::string error;     // why it failed
};

// Stage 1 of compaction: tool outputs at seq <= elided_through are shown as recall pointers.
struct CompactionElided {
  static constexpr const char* kType = "compaction.elided";
  static constexpr int kVersion = 1;
  CompactionScope scope;
  CompactionOutcome outcome = CompactionOutcome::kCompacted;
  std::string source;  // elision
  int64_t tokens_after = 0;
};

// A message too large for the window on its own, cut to a head and a tail (context/compaction.h):
// the messages of event `seq` are shown with every text field over max_tokens cut.
struct CompactionCut {
  static constexpr const char* kType = "compaction.cut";
  static constexpr int kVersion = 1;
  struct Cut {
    int64_t seq = 0;
    int64_t max_tokens = 0;
    int64_t bytes = 0;  // the text the cut fields held
    bool operator==(const Cut&) const = default;
  };
  CompactionScope scope;
  CompactionOutcome outcome = CompactionOutcome::kCompacted;
  std::string source;  // cut
  std::vector<Cut> cuts;
  std::vector<int64_t> units;  // first seq of each unit cut
  int64_t tokens_after = 0;
};

// A user-role turn of the transcript written by the runtime.
struct UserMessage {
  static constexpr const char* kType = "user.message";
  static constexpr int kVersion = 1;
  static constexpr const char* kGoalTurn = "goal_turn";      // the model stopped; keep going
  static constexpr const char* kBudget = "budget";           // a budget is near its limit
  static constexpr const char* kModelError = "model_error";  // the last reply was unusable
  std::string content;
  std::string reason;
};

struct GoalChanged {
  static constexpr const char* kType = "goal.changed";
  static constexpr int kVersion = 1;
  GoalVerb verb = GoalVerb::kSet;  // required
  std::optional<std::string> objective;
  std::optional<GoalStatus> status;  // overrides the verb's status
  std::optional<std::string> progress;
  std::optional<double> target;
};

struct BudgetWarned {
  static constexpr const char* kType = "budget.warned";
  static constexpr int kVersion = 1;
  std::string which;  // required
  double used = 0;
  double limit = 0;
  // The note went out because the next step was predicted to take `which` past 90% (used is
  // what is used now, below it).
  bool predicted = false;
};

struct RunPaused {
  static constexpr const char* kType = "run.paused";
  static constexpr int kVersion = 1;
  // interrupted | stopped | goal_paused | goal_auto_paused | model_error | model_unavailable |
  // context_overflow | context_too_small | session_ended
  std::string reason;
  std::string message;
};

struct RunResumed {
  static constexpr const char* kType = "run.resumed";
  static constexpr int kVersion = 1;
  std::string reason;
  // Settings given to `marathon resume` (e.g. model_timeout_s): they override the run's config
  // from here on, and later resumes keep them. Empty: none.
  json config = json::object();
  // The machine that carries the run on from here (its host name): where each segment ran, e.g.
  // after the run folder moved to another machine. Absent in logs written before it was recorded.
  std::optional<std::string> host;
};

// A client asked the runner to stop (`marathon stop`, the control protocol's run/stop): it pauses
// at its next step with run.paused{stopped}. Void from the next run.resumed on (fold ignores it;
// the runner reads it).
struct RunStopRequested {
  static constexpr const char* kType = "run.stop_requested";
  static constexpr int kVersion = 1;
  std::string reason;  // "" when none was given
};

struct RunFinished {
  static constexpr const char* kType = "run.finished";
  static constexpr int kVersion = 1;
  std::string reason;  // finish | budget | target | goal_cleared | error
  std::string summary;
};

// A runner session started with --unsafe-no-sandbox: the model's commands and candidates' code ran
// without the sandbox from here (docs/security.md).
struct SandboxDisabled {
  static constexpr const char* kType = "sandbox.disabled";
  static constexpr int kVersion = 1;
  std::string reason;   // the probe's finding, or that the user asked
  std::string command;  // run | resume
};

// The first event of a fork after the copied prefix.
struct RunForked {
  static constexpr const char* kType = "run.forked";
  static constexpr int kVersion = 1;
  std::string run_id;  // required: the new run
  std::string from_run_id;
  std::string from_dir;
  int64_t at_seq = 0;
  // Limits the fork replaces (`marathon fork --max-tool-calls ...`); each absent: the original's.
  std::optional<BudgetSpec> budget;
};

// ---- JSON conversions (nlohmann ADL) ----------------------------------------------------------

#define MARATHON_EVENT_JSON(T)       \
  void to_json(json& j, const T& p); \
  void from_json(const json& j, T& p);
MARATHON_EVENT_JSON(GoalSpec)
MARATHON_EVENT_JSON(BudgetSpec)
MARATHON_EVENT_JSON(ModelError)
MARATHON_EVENT_JSON(ReplayOf)
MARATHON_EVENT_JSON(RunCreated)
MARATHON_EVENT_JSON(ModelRequest)
MARATHON_EVENT_JSON(ModelResponse)
MARATHON_EVENT_JSON(LlmUsageRejected)
MARATHON_EVENT_JSON(ToolStarted)
MARATHON_EVENT_JSON(ToolFinished)
MARATHON_EVENT_JSON(WorkspaceWritten)
MARATHON_EVENT_JSON(ExecutorRef)
MARATHON_EVENT_JSON(EvalFinished)
MARATHON_EVENT_JSON(EvalRemeasured)
MARATHON_EVENT_JSON(EvalSubmitted)
MARATHON_EVENT_JSON(ExecutorJobLost)
MARATHON_EVENT_JSON(ExecutorSlotQuarantined)
MARATHON_EVENT_JSON(CandidateImported)
MARATHON_EVENT_JSON(LedgerNoted)
MARATHON_EVENT_JSON(CompactionRequested)
MARATHON_EVENT_JSON(CompactionProposed)
MARATHON_EVENT_JSON(CompactionInstalled)
MARATHON_EVENT_JSON(CompactionElided)
MARATHON_EVENT_JSON(CompactionCut)
MARATHON_EVENT_JSON(UserMessage)
MARATHON_EVENT_JSON(GoalChanged)
MARATHON_EVENT_JSON(BudgetWarned)
MARATHON_EVENT_JSON(RunPaused)
MARATHON_EVENT_JSON(RunResumed)
MARATHON_EVENT_JSON(RunStopRequested)
MARATHON_EVENT_JSON(RunFinished)
MARATHON_EVENT_JSON(SandboxDisabled)
MARATHON_EVENT_JSON(RunForked)
#undef MARATHON_EVENT_JSON

// One row of the type table (docs/event-log.md has the same rows).
struct TypeInfo {
  const char* name;
  int version;
  std::vector<std::string> fields;  // top-level payload fields, "?" marks an optional one
};
const std::vector<TypeInfo>& all_types();

// The bulky payload fields fold() never reads, per type, as JSON paths ("$.output"): load_state
// skips their text. A fold rule that needs one must take it off this list (model.response's
// message is read: State::turn keeps the last turn's tool calls, State::compaction an
// interrupted compaction's summariser reply).
const std::vector<std::pair<std::string, std::vector<std::string>>>& fold_skipped_fields();

// A compaction.* type, known to this binary or not.
bool is_compaction_type(std::string_view type);

// The run id that run.created and run.forked carry (the log's identity); nullopt for other types
// or a payload without a string run_id.
std::optional<std::string> run_id_of(const Event& e);

}  // namespace events

// ---- Events and payloads ------------------------------------------------------------------------

template <class P>
bool is(const Event& e) {
  return e.type == P::kType;
}
template <class P>
bool is(const NewEvent& e) {
  return e.type == P::kType;
}

// The payload of `e` as a P. Throws std::invalid_argument "event seq N (type): field 'f' ..."
// when it does not match.
[[noreturn]] void throw_payload_error(const Event& e, const std::exception& why);
template <class P>
P payload_of(const Event& e) {
  try {
    return e.payload.get<P>();
  } catch (const std::exception& ex) {
    throw_payload_error(e, ex);
  }
}

// A new event carrying `p` (type and version from P).
template <class P>
NewEvent make_event(const P& p, std::string causation = "") {
  NewEvent e;
  e.type = P::kType;
  e.type_version = P::kVersion;
  e.payload = p;
  e.causation = std::move(causation);
  return e;
}

}  // namespace marathon
