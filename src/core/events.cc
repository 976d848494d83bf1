// The payload conversions of every event type (events.h) and the enumerations' names.
#include "core/events.h"

#include <array>
#include <utility>

#include "core/payload_reader.h"

namespace marathon {

// ---- enumerations -------------------------------------------------------------------------------

namespace {

template <class E, size_t N>
std::string name_of(const std::array<std::pair<E, const char*>, N>& names, E v) {
  for (const auto& [e, n] : names) {
    if (e == v) return n;
  }
  return "unknown";
}

template <class E, size_t N>
std::optional<E> value_of(const std::array<std::pair<E, const char*>, N>& names,
                          std::string_view s) {
  for (const auto& [e, n] : names) {
    if (s == n) return e;
  }
  return std::nullopt;
}

template <class E, size_t N>
E value_or_throw(const std::array<std::pair<E, const char*>, N>& names, std::string_view s,
                 const char* what) {
  if (auto v = value_of(names, s)) return *v;
  std::string list;
  for (const auto& [e, n] : names) list += (list.empty() ? "" : "/") + std::string(n);
  throw std::invalid_argument(std::string(what) + " '" + std::string(s) + "' is not one of " +
                              list);
}

constexpr std::array<std::pair<Direction, const char*>, 2> kDirections{
    {{Direction::kMax, "max"}, {Direction::kMin, "min"}}};
constexpr std::array<std::pair<GoalStatus, const char*>, 4> kGoalStatuses{
    {{GoalStatus::kActive, "active"},
     {GoalStatus::kPaused, "paused"},
     {GoalStatus::kCleared, "cleared"},
     {GoalStatus::kDone, "done"}}};
constexpr std::array<std::pair<GoalVerb, const char*>, 7> kGoalVerbs{
    {{GoalVerb::kSet, "set"},
     {GoalVerb::kEdit, "edit"},
     {GoalVerb::kPause, "pause"},
     {GoalVerb::kResume, "resume"},
     {GoalVerb::kClear, "clear"},
     {GoalVerb::kAutoPause, "auto_pause"},
     {GoalVerb::kDone, "done"}}};
constexpr std::array<std::pair<LedgerKind, const char*>, 4> kLedgerKinds{
    {{LedgerKind::kAttempt, "attempt"},
     {LedgerKind::kStrategy, "strategy"},
     {LedgerKind::kFinding, "finding"},
     {LedgerKind::kDeadEnd, "dead_end"}}};
constexpr std::array<std::pair<EvalStatus, const char*>, 5> kEvalStatuses{
    {{EvalStatus::kOk, "ok"},
     {EvalStatus::kInvalidOutput, "invalid_output"},
     {EvalStatus::kNonzeroExit, "nonzero_exit"},
     {EvalStatus::kTimeout, "timeout"},
     {EvalStatus::kCrash, "crash"}}};
constexpr std::array<std::pair<LlmErrorKind, const char*>, 11> kLlmErrorKinds{
    {{LlmErrorKind::kContextLength, "context_length"},
     {LlmErrorKind::kAuth, "auth"},
     {LlmErrorKind::kNotFound, "not_found"},
     {LlmErrorKind::kMalformed, "malformed"},
     {LlmErrorKind::kTransport, "transport"},
     {LlmErrorKind::kRateLimitedExhausted, "rate_limited_exhausted"},
     {LlmErrorKind::kBadRequest, "bad_request"},
     {LlmErrorKind::kReplayExhausted, "replay_exhausted"},
     {LlmErrorKind::kUnavailable, "unavailable"},
     {LlmErrorKind::kException, "exception"},
     {LlmErrorKind::kInterrupted, "interrupted"}}};
constexpr std::array<std::pair<CompactionOutcome, const char*>, 3> kCompactionOutcomes{
    {{CompactionOutcome::kCompacted, "compacted"},
     {CompactionOutcome::kNoop, "noop"},
     {CompactionOutcome::kFailed, "failed"}}};

}  // namespace

std::string to_string(Direction d) { return name_of(kDirections, d); }
Direction direction_from_string(std::string_view s) {
  return value_or_throw(kDirections, s, "direction");
}
std::optional<Direction> parse_direction(std::string_view s) { return value_of(kDirections, s); }
std::string to_string(GoalStatus s) { return name_of(kGoalStatuses, s); }
GoalStatus goal_status_from_string(std::string_view s) {
  return value_or_throw(kGoalStatuses, s, "goal status");
}
std::string to_string(GoalVerb v) { return name_of(kGoalVerbs, v); }
GoalVerb goal_verb_from_string(std::string_view s) {
  return value_or_throw(kGoalVerbs, s, "goal verb");
}
std::optional<GoalStatus> status_after(GoalVerb v) {
  switch (v) {
    case GoalVerb::kSet:
    case GoalVerb::kResume:
      return GoalStatus::kActive;
    case GoalVerb::kPause:
    case GoalVerb::kAutoPause:
      return GoalStatus::kPaused;
    case GoalVerb::kClear:
      return GoalStatus::kCleared;
    case GoalVerb::kDone:
      return GoalStatus::kDone;
    case GoalVerb::kEdit:
      break;
  }
  return std::nullopt;
}
std::string to_string(LedgerKind k) { return name_of(kLedgerKinds, k); }
LedgerKind ledger_kind_from_string(std::string_view s) {
  return value_or_throw(kLedgerKinds, s, "ledger kind");
}
std::string to_string(EvalStatus s) { return name_of(kEvalStatuses, s); }
EvalStatus eval_status_from_string(std::string_view s) {
  return value_or_throw(kEvalStatuses, s, "eval status");
}
std::string to_string(LlmErrorKind k) { return name_of(kLlmErrorKinds, k); }
LlmErrorKind llm_error_kind_from_string(std::string_view s) {
  return value_of(kLlmErrorKinds, s).value_or(LlmErrorKind::kUnknown);
}
bool is_permanent(LlmErrorKind k) {
  return k == LlmErrorKind::kAuth || k == LlmErrorKind::kNotFound ||
         k == LlmErrorKind::kBadRequest || k == LlmErrorKind::kReplayExhausted;
}
std::string to_string(CompactionOutcome o) { return name_of(kCompactionOutcomes, o); }
CompactionOutcome compaction_outcome_from_string(std::string_view s) {
  return value_or_throw(kCompactionOutcomes, s, "compaction outcome");
}

namespace {
std::string_view name_in(const json& j, const char* what) {
  if (!j.is_string()) throw std::invalid_argument(std::string(what) + " is not a string");
  return j.get_ref<const std::string&>();
}
}  // namespace

void to_json(json& j, Direction v) { j = to_string(v); }
void from_json(const json& j, Direction& v) { v = direction_from_string(name_in(j, "direction")); }
void to_json(json& j, GoalStatus v) { j = to_string(v); }
void from_json(const json& j, GoalStatus& v) {
  v = goal_status_from_string(name_in(j, "goal status"));
}
void to_json(json& j, GoalVerb v) { j = to_string(v); }
void from_json(const json& j, GoalVerb& v) { v = goal_verb_from_string(name_in(j, "goal verb")); }
void to_json(json& j, LedgerKind v) { j = to_string(v); }
void from_json(const json& j, LedgerKind& v) {
  v = ledger_kind_from_string(name_in(j, "ledger kind"));
}
void to_json(json& j, EvalStatus v) { j = to_string(v); }
void from_json(const json& j, EvalStatus& v) {
  v = eval_status_from_string(name_in(j, "eval status"));
}
void to_json(json& j, LlmErrorKind v) { j = to_string(v); }
void from_json(const json& j, LlmErrorKind& v) {
  v = llm_error_kind_from_string(name_in(j, "error kind"));
}
void to_json(json& j, CompactionOutcome v) { j = to_string(v); }
void from_json(const json& j, CompactionOutcome& v) {
  v = compaction_outcome_from_string(name_in(j, "compaction outcome"));
}

bool improves(Direction d, double score, std::optional<double> best) {
  if (!best) return true;
  return d == Direction::kMin ? score < *best : score > *best;
}

bool target_met(Direction d, std::optional<double> best, std::optional<double> target) {
  if (!target || !best) return false;
  return d == Direction::kMin ? *best <= *target : *best >= *target;
}

double better_first_key(Direction d, double score) { return d == Direction::kMin ? score : -score; }

// ---- errors and the reader ----------------------------------------------------------------------

PayloadError::PayloadError(std::string type, std::string field, std::string problem)
    : std::invalid_argument(type + ": field '" + field + "' " + problem),
      type_(std::move(type)),
      field_(std::move(field)),
      problem_(std::move(problem)) {}

void throw_payload_error(const Event& e, const std::exception& why) {
  std::string at = "event seq " + std::to_string(e.seq) + " (" + e.type + "): ";
  if (const auto* p = dynamic_cast<const PayloadError*>(&why)) {
    throw std::invalid_argument(at + "field '" + p->field() + "' " + p->problem());
  }
  throw std::invalid_argument(at + why.what());
}

PayloadReader::PayloadReader(const json& j, std::string type, std::string prefix)
    : j_(j), type_(std::move(type)), prefix_(std::move(prefix)) {
  if (!j.is_object()) {
    if (prefix_.empty()) throw PayloadError(type_, "payload", "is not an object");
    throw PayloadError(type_, prefix_.substr(0, prefix_.size() - 1), "is not an object");
  }
}

void PayloadReader::fail(const std::string& field, const std::string& problem) const {
  throw PayloadError(type_, prefix_ + field, problem);
}

PayloadReader PayloadReader::sub(const json& j, const std::string& field) const {
  return PayloadReader(j, type_, prefix_ + field + ".");
}

const json* PayloadReader::find(const char* k) const {
  auto it = j_.find(k);
  return it == j_.end() || it->is_null() ? nullptr : &*it;
}

std::string PayloadReader::str(const char* k) const {
  const json* v = find(k);
  if (!v) fail(k, "is missing");
  if (!v->is_string()) fail(k, "is not a string");
  return v->get<std::string>();
}

std::string PayloadReader::opt_str(const char* k, const std::string& def) const {
  return maybe_str(k).value_or(def);
}

std::optional<std::string> PayloadReader::maybe_str(const char* k) const {
  const json* v = find(k);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(k, "is not a string");
  return v->get<std::string>();
}

std::optional<double> PayloadReader::opt_num(const char* k) const {
  const json* v = find(k);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(k, "is not a number");
  return v->get<double>();
}

std::optional<int64_t> PayloadReader::opt_int(const char* k) const {
  const json* v = find(k);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail(k, "is out of range");
    return v->get<int64_t>();
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  if (!v->is_number()) fail(k, "is not a number");
  // Converting a double no int64 holds is undefined: such a payload is malformed.
  const double d = v->get<double>();
  if (!(d >= -0x1p63 && d < 0x1p63)) fail(k, "is out of range");
  return static_cast<int64_t>(d);
}

int64_t PayloadReader::saturated_int(const char* k) const {
  const json* v = find(k);
  if (!v) return 0;
  if (v->is_number_unsigned()) {
    return v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : v->get<int64_t>();
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  if (!v->is_number()) fail(k, "is not a number");
  const double d = v->get<double>();
  if (d >= 0x1p63) return INT64_MAX;
  if (d < -0x1p63) return INT64_MIN;
  return static_cast<int64_t>(d);
}

bool PayloadReader::opt_bool(const char* k, bool def) const {
  const json* v = find(k);
  if (!v) return def;
  if (!v->is_boolean()) fail(k, "is not a boolean");
  return v->get<bool>();
}

const json& PayloadReader::obj(const char* k) const {
  const json* v = find(k);
  if (!v) fail(k, "is missing");
  if (!v->is_object()) fail(k, "is not an object");
  return *v;
}

const json* PayloadReader::opt_obj(const char* k) const {
  const json* v = find(k);
  if (v && !v->is_object()) fail(k, "is not an object");
  return v;
}

const json* PayloadReader::opt_arr(const char* k) const {
  const json* v = find(k);
  if (v && !v->is_array()) fail(k, "is not an array");
  return v;
}

namespace events {

namespace {

// An enum read from a string field, the error naming the field.
template <class F>
auto enum_field(const PayloadReader& r, const char* k, F parse) -> decltype(parse("")) {
  std::string s = r.str(k);
  try {
    return parse(s);
  } catch (const std::invalid_argument& e) {
    r.fail(k, std::string("is invalid: ") + e.what());
  }
}

void put_opt(json& j, const char* k, const std::optional<double>& v) {
  if (v) j[k] = *v;
}
void put_opt(json& j, const char* k, const std::optional<int64_t>& v) {
  if (v) j[k] = *v;
}
void put_nonempty(json& j, const char* k, const std::string& v) {
  if (!v.empty()) j[k] = v;
}

// Field names shared by several types.
constexpr const char* kTrigger = "trigger";
constexpr const char* kReason = "reason";
constexpr const char* kSummarizedThrough = "summarized_through";
constexpr const char* kElidedThrough = "elided_through";
constexpr const char* kTokensBefore = "tokens_before";
constexpr const char* kTokensAfter = "tokens_after";
constexpr const char* kOutcome = "outcome";
constexpr const char* kSource = "source";
constexpr const char* kSummary = "summary";
constexpr const char* kError = "error";
constexpr const char* kRunId = "run_id";
constexpr const char* kCallId = "call_id";
constexpr const char* kName = "name";
constexpr const char* kMessage = "message";
constexpr const char* kElapsed = "elapsed_s";
constexpr const char* kGpu = "gpu_s";
constexpr const char* kTurn = "turn";

void put_scope(json& j, const CompactionScope& s) {
  j[kTrigger] = s.trigger;
  j[kReason] = s.reason;
  j[kSummarizedThrough] = s.summarized_through;
  j[kElidedThrough] = s.elided_through;
  j[kTokensBefore] = s.tokens_before;
}

CompactionScope read_scope(const PayloadReader& r) {
  CompactionScope s;
  s.trigger = r.opt_str(kTrigger);
  s.reason = r.opt_str(kReason);
  s.summarized_through = r.integer(kSummarizedThrough, 0);
  s.elided_through = r.integer(kElidedThrough, 0);
  s.tokens_before = r.integer(kTokensBefore, 0);
  return s;
}

}  // namespace

// -- shared parts

void to_json(json& j, const GoalSpec& g) {
  j = json{{"objective", g.objective}, {"metric", g.metric}, {"direction", to_string(g.direction)}};
  put_opt(j, "target", g.target);
}
void from_json(const json& j, GoalSpec& g) {
  PayloadReader r(j, "goal");
  g.objective = r.opt_str("objective");
  g.metric = r.opt_str("metric");
  g.direction =
      r.has("direction") ? enum_field(r, "direction", direction_from_string) : Direction::kMax;
  g.target = r.opt_num("target");
}

void to_json(json& j, const BudgetSpec& b) {
  j = json::object();
  put_opt(j, "max_tool_calls", b.max_tool_calls);
  put_opt(j, "max_wall_s", b.max_wall_s);
  put_opt(j, "max_tokens", b.max_tokens);
  put_opt(j, "max_cost_usd", b.max_cost_usd);
  put_opt(j, "max_gpu_s", b.max_gpu_s);
}
void from_json(const json& j, BudgetSpec& b) {
  PayloadReader r(j, "budget");
  b.max_tool_calls = r.opt_int("max_tool_calls");
  b.max_wall_s = r.opt_num("max_wall_s");
  b.max_tokens = r.opt_int("max_tokens");
  b.max_cost_usd = r.opt_num("max_cost_usd");
  b.max_gpu_s = r.opt_num("max_gpu_s");
}

constexpr const char* kKind = "kind";
constexpr const char* kHttpStatus = "http_status";
constexpr const char* kAttempts = "attempts";

ModelError ModelError::make(LlmErrorKind kind, std::string message) {
  ModelError e;
  e.kind = kind;
  e.kind_text = to_string(kind);
  e.message = std::move(message);
  return e;
}
void to_json(json& j, const ModelError& e) {
  j = e.extra.is_object() ? e.extra : json::object();
  j[kKind] = e.kind_text.empty() ? to_string(e.kind) : e.kind_text;
  j[kMessage] = e.message;
  put_opt(j, kHttpStatus, e.http_status);
  put_opt(j, kAttempts, e.attempts);
}
void from_json(const json& j, ModelError& e) {
  PayloadReader r(j, "error");
  e.kind_text = r.opt_str(kKind, "unknown");
  e.kind = llm_error_kind_from_string(e.kind_text);
  e.message = r.opt_str(kMessage);
  e.http_status = r.opt_int(kHttpStatus);
  e.attempts = r.opt_int(kAttempts);
  e.extra = j;
  for (const char* k : {kKind, kMessage, kHttpStatus, kAttempts}) e.extra.erase(k);
}

void to_json(json& j, const ReplayOf& r) { j = json{{kRunId, r.run_id}, {"run_dir", r.run_dir}}; }
void from_json(const json& j, ReplayOf& r) {
  PayloadReader rd(j, "replay_of");
  r.run_id = rd.opt_str(kRunId);
  r.run_dir = rd.opt_str("run_dir");
}

// An optional object field of an event read as T; a bad value inside it fails naming the event
// and the path ("budget.max_tool_calls").
namespace {
template <class T>
std::optional<T> opt_record(const PayloadReader& r, const char* field) {
  const json* o = r.opt_obj(field);
  if (!o) return std::nullopt;
  try {
    return o->get<T>();
  } catch (const PayloadError& e) {
    r.fail(std::string(field) + "." + e.field(), e.problem());
  }
}
}  // namespace

// -- run.created

void to_json(json& j, const RunCreated& p) {
  j = json{{kRunId, p.run_id}, {"task", p.task}, {"config", p.config}};
  if (p.task_dir) j["task_dir"] = *p.task_dir;
  if (p.goal) j["goal"] = *p.goal;
  if (p.budget) j["budget"] = *p.budget;
  if (p.replay_of) j["replay_of"] = *p.replay_of;
}
void from_json(const json& j, RunCreated& p) {
  PayloadReader r(j, RunCreated::kType);
  p.run_id = r.str(kRunId);
  if (const json* t = r.opt_obj("task")) p.task = *t;
  p.task_dir = r.maybe_str("task_dir");
  p.goal = opt_record<GoalSpec>(r, "goal");
  p.budget = opt_record<BudgetSpec>(r, "budget");
  if (const json* c = r.opt_obj("config")) p.config = *c;
  p.replay_of = opt_record<ReplayOf>(r, "replay_of");
}

// -- model.request

void to_json(json& j, const ModelRequest& p) {
  j = json{{"prompt_sha", p.prompt_sha},
           {"n_messages", p.n_messages},
           {"tokens_estimate", p.tokens_estimate}};
  put_opt(j, kTurn, p.turn);
}
void from_json(const json& j, ModelRequest& p) {
  PayloadReader r(j, ModelRequest::kType);
  p.turn = r.opt_int(kTurn);
  p.prompt_sha = r.opt_str("prompt_sha");
  p.n_messages = r.integer("n_messages", 0);
  p.tokens_estimate = r.integer("tokens_estimate", 0);
}

// -- model.response

constexpr const char* kUsage = "usage";
constexpr const char* kPromptTokens = "prompt_tokens";
constexpr const char* kCompletionTokens = "completion_tokens";
constexpr const char* kCacheReadTokens = "cache_read_tokens";
constexpr const char* kCacheWriteTokens = "cache_write_tokens";
constexpr const char* kProblems = "problems";
constexpr const char* kPurpose = "purpose";
constexpr const char* kUsageEstimated = "usage_estimated";

void to_json(json& j, const ModelResponse& p) {
  json usage = {{kPromptTokens, p.usage.prompt_tokens},
                {kCompletionTokens, p.usage.completion_tokens}};
  if (p.usage.cache_read_tokens > 0) usage[kCacheReadTokens] = p.usage.cache_read_tokens;
  if (p.usage.cache_write_tokens > 0) usage[kCacheWriteTokens] = p.usage.cache_write_tokens;
  j = json{{kMessage, p.message},    {kUsage, std::move(usage)},
           {"cost_usd", p.cost_usd}, {"provider", p.provider},
           {"model", p.model},       {"finish_reason", p.finish_reason}};
  if (p.error) j[kError] = *p.error;
  if (p.problems.is_array() && !p.problems.empty()) j[kProblems] = p.problems;
  put_nonempty(j, kPurpose, p.purpose);
  if (p.scope) put_scope(j, *p.scope);
  if (p.usage_estimated) j[kUsageEstimated] = true;
}
void from_json(const json& j, ModelResponse& p) {
  PayloadReader r(j, ModelResponse::kType);
  if (const json* m = r.find(kMessage)) p.message = *m;
  if (const json* u = r.opt_obj(kUsage)) {
    PayloadReader ur = r.sub(*u, kUsage);
    // Saturated, not refused: a count an older runtime took from the provider unchecked is
    // capped where it is counted (add_model_spend), as every other bad count is.
    p.usage.prompt_tokens = ur.saturated_int(kPromptTokens);
    p.usage.completion_tokens = ur.saturated_int(kCompletionTokens);
    p.usage.cache_read_tokens = ur.saturated_int(kCacheReadTokens);
    p.usage.cache_write_tokens = ur.saturated_int(kCacheWriteTokens);
  }
  p.cost_usd = r.num("cost_usd", 0);
  p.provider = r.opt_str("provider");
  p.model = r.opt_str("model");
  p.finish_reason = r.opt_str("finish_reason");
  if (const json* e = r.opt_obj(kError)) {
    try {
      p.error = e->get<ModelError>();
    } catch (const PayloadError& ex) {
      r.fail(std::string(kError) + "." + ex.field(), ex.problem());
    }
  }
  if (const json* pr = r.opt_arr(kProblems)) p.problems = *pr;
  p.purpose = r.opt_str(kPurpose);
  if (!p.purpose.empty()) p.scope = read_scope(r);
  p.usage_estimated = r.opt_bool(kUsageEstimated, false);
}

// -- llm.usage_rejected

void to_json(json& j, const LlmUsageRejected& p) {
  j = json{{kProblems, p.problems},
           {"reported", p.reported},
           {"estimated",
            {{kPromptTokens, p.estimated.prompt_tokens},
             {kCompletionTokens, p.estimated.completion_tokens}}},
           {"provider", p.provider},
           {"model", p.model}};
  put_nonempty(j, kPurpose, p.purpose);
}
void from_json(const json& j, LlmUsageRejected& p) {
  PayloadReader r(j, LlmUsageRejected::kType);
  if (const json* pr = r.opt_arr(kProblems)) {
    for (const json& line : *pr) {
      if (!line.is_string()) r.fail(kProblems, "holds a value that is not a string");
      p.problems.push_back(line.get<std::string>());
    }
  }
  if (const json* rep = r.find("reported")) p.reported = *rep;
  if (const json* est = r.opt_obj("estimated")) {
    PayloadReader er = r.sub(*est, "estimated");
    p.estimated.prompt_tokens = er.saturated_int(kPromptTokens);
    p.estimated.completion_tokens = er.saturated_int(kCompletionTokens);
  }
  p.provider = r.opt_str("provider");
  p.model = r.opt_str("model");
  p.purpose = r.opt_str(kPurpose);
}

// -- tool.started / tool.finished

constexpr const char* kArguments = "arguments";

void to_json(json& j, const ToolStarted& p) {
  j = json{{kCallId, p.call_id}, {kName, p.name}, {kArguments, p.arguments}};
  put_opt(j, kTurn, p.turn);
  put_opt(j, "index", p.index);
  put_nonempty(j, kSource, p.source);
}
void from_json(const json& j, ToolStarted& p) {
  PayloadReader r(j, ToolStarted::kType);
  p.call_id = r.str(kCallId);
  p.name = r.str(kName);
  if (auto it = j.find(kArguments); it != j.end()) p.arguments = *it;
  p.turn = r.opt_int(kTurn);
  p.index = r.opt_int("index");
  p.source = r.opt_str(kSource);
}

constexpr const char* kInterrupted = "interrupted";
constexpr const char* kNotRun = "not_run";

void to_json(json& j, const ToolFinished& p) {
  j = json{{kCallId, p.call_id},
           {kName, p.name},
           {"ok", p.ok},
           {"output", p.output},
           {kElapsed, p.elapsed_s}};
  put_nonempty(j, "output_sha", p.output_sha);
  put_opt(j, kGpu, p.gpu_s);
  if (p.interrupted) j[kInterrupted] = true;
  if (p.not_run) j[kNotRun] = true;
}
void from_json(const json& j, ToolFinished& p) {
  PayloadReader r(j, ToolFinished::kType);
  p.call_id = r.str(kCallId);
  p.name = r.opt_str(kName);
  p.ok = r.opt_bool("ok", false);
  p.output = r.opt_str("output");
  p.output_sha = r.opt_str("output_sha");
  p.elapsed_s = r.num(kElapsed, 0);
  p.gpu_s = r.opt_num(kGpu);
  p.interrupted = r.opt_bool(kInterrupted, false);
  p.not_run = r.opt_bool(kNotRun, false);
}

// -- workspace.written

void to_json(json& j, const WorkspaceWritten& p) {
  j = json{{"path", p.path}};
  if (p.deleted) {
    j["deleted"] = true;
  } else {
    j["sha"] = p.sha;
    j["size"] = p.size;
  }
  put_nonempty(j, kSource, p.source);
}
void from_json(const json& j, WorkspaceWritten& p) {
  PayloadReader r(j, WorkspaceWritten::kType);
  p.path = r.str("path");
  p.deleted = r.opt_bool("deleted", false);
  p.sha = p.deleted ? r.opt_str("sha") : r.str("sha");
  p.size = r.integer("size", 0);
  p.source = r.opt_str(kSource);
}

// -- eval.finished

constexpr const char* kExecutor = "executor";
constexpr const char* kSubmissionId = "submission_id";
constexpr const char* kAttempt = "attempt";
constexpr const char* kCacheKey = "cache_key";
constexpr const char* kCandidate = "candidate";

void to_json(json& j, const ExecutorRef& p) {
  j = json{{kName, p.name}, {"where", p.where}};
  put_nonempty(j, "node", p.node);
}
void from_json(const json& j, ExecutorRef& p) {
  PayloadReader r(j, EvalFinished::kType, std::string(kExecutor) + ".");
  p.name = r.opt_str(kName);
  p.where = r.opt_str("where");
  p.node = r.opt_str("node");
}

void to_json(json& j, const EvalFinished& p) {
  j = json{{kCandidate, p.candidate},       {kCacheKey, p.cache_key},
           {"strategy", p.strategy},        {"cached", p.cached},
           {"status", to_string(p.status)}, {"result", p.result},
           {kElapsed, p.elapsed_s},         {kGpu, p.gpu_s}};
  if (p.shared) j["shared"] = true;
  if (p.executor) j[kExecutor] = *p.executor;
}
void from_json(const json& j, EvalFinished& p) {
  PayloadReader r(j, EvalFinished::kType);
  p.candidate = r.str(kCandidate);
  p.cache_key = r.opt_str(kCacheKey);
  p.cached = r.opt_bool("cached", false);
  p.shared = r.opt_bool("shared", false);
  p.status = r.has("status") ? enum_field(r, "status", eval_status_from_string) : EvalStatus::kOk;
  if (const json* res = r.opt_obj("result")) p.result = *res;
  p.elapsed_s = r.num(kElapsed, 0);
  p.gpu_s = r.num(kGpu, 0);
  p.strategy = r.opt_str("strategy");
  if (const json* x = r.opt_obj(kExecutor)) p.executor = x->get<ExecutorRef>();
}

// -- eval.remeasured

void to_json(json& j, const EvalRemeasured& p) {
  j = json{{kCandidate, p.candidate}, {kCacheKey, p.cache_key}, {"index", p.index},
           {"phase", p.phase},        {"seed", p.seed},         {"status", to_string(p.status)},
           {"result", p.result},      {kElapsed, p.elapsed_s},  {kGpu, p.gpu_s}};
  if (p.executor) j[kExecutor] = *p.executor;
}
void from_json(const json& j, EvalRemeasured& p) {
  PayloadReader r(j, EvalRemeasured::kType);
  p.candidate = r.str(kCandidate);
  p.cache_key = r.opt_str(kCacheKey);
  p.index = r.integer("index", 0);
  p.phase = r.opt_str("phase", EvalRemeasured::kBest);
  p.seed = r.integer("seed", 0);
  p.status = r.has("status") ? enum_field(r, "status", eval_status_from_string) : EvalStatus::kOk;
  if (const json* res = r.opt_obj("result")) p.result = *res;
  p.elapsed_s = r.num(kElapsed, 0);
  p.gpu_s = r.num(kGpu, 0);
  if (const json* x = r.opt_obj(kExecutor)) p.executor = x->get<ExecutorRef>();
}

// -- eval.submitted / executor.*

void to_json(json& j, const EvalSubmitted& p) {
  j = json{{kExecutor, p.executor},  {kSubmissionId, p.submission_id}, {kAttempt, p.attempt},
           {kCacheKey, p.cache_key}, {kCandidate, p.candidate},        {"entrypoint", p.entrypoint},
           {"num_gpus", p.num_gpus}};
}
void from_json(const json& j, EvalSubmitted& p) {
  PayloadReader r(j, EvalSubmitted::kType);
  p.executor = r.opt_str(kExecutor);
  p.submission_id = r.str(kSubmissionId);
  p.attempt = r.integer(kAttempt, 0);
  p.cache_key = r.opt_str(kCacheKey);
  p.candidate = r.opt_str(kCandidate);
  p.entrypoint = r.opt_str("entrypoint");
  p.num_gpus = r.integer("num_gpus", 0);
}

constexpr const char* kRetry = "retry";

void to_json(json& j, const ExecutorJobLost& p) {
  j = json{{kExecutor, p.executor},
           {kSubmissionId, p.submission_id},
           {kAttempt, p.attempt},
           {kReason, p.reason},
           {"logs_tail", p.logs_tail}};
  j[kRetry] = p.retry ? json(*p.retry) : json(nullptr);
  put_nonempty(j, "node", p.node);
  put_nonempty(j, "retry_node", p.retry_node);
}
void from_json(const json& j, ExecutorJobLost& p) {
  PayloadReader r(j, ExecutorJobLost::kType);
  p.executor = r.opt_str(kExecutor);
  p.submission_id = r.str(kSubmissionId);
  p.attempt = r.integer(kAttempt, 0);
  p.reason = r.opt_str(kReason);
  p.logs_tail = r.opt_str("logs_tail");
  p.retry = r.maybe_str(kRetry);
  p.node = r.opt_str("node");
  p.retry_node = r.opt_str("retry_node");
}

void to_json(json& j, const ExecutorSlotQuarantined& p) {
  j = json{{kExecutor, p.executor},
           {"slot", p.slot},
           {"faults_in_a_row", p.faults_in_a_row},
           {"last_status", to_string(p.last_status)},
           {"healthy_slots", p.healthy_slots}};
}
void from_json(const json& j, ExecutorSlotQuarantined& p) {
  PayloadReader r(j, ExecutorSlotQuarantined::kType);
  p.executor = r.opt_str(kExecutor, "local");
  p.slot = r.str("slot");
  p.faults_in_a_row = r.integer("faults_in_a_row", 0);
  p.last_status = r.has("last_status") ? enum_field(r, "last_status", eval_status_from_string)
                                       : EvalStatus::kCrash;
  p.healthy_slots = r.integer("healthy_slots", 0);
}

// -- candidate.imported

void to_json(json& j, const CandidateImported& p) {
  j = json{{kCandidate, p.candidate}, {"files", p.files}, {"from_branch", p.from_branch}};
  put_opt(j, "score", p.score);
}
void from_json(const json& j, CandidateImported& p) {
  PayloadReader r(j, CandidateImported::kType);
  p.candidate = r.str(kCandidate);
  for (const auto& [path, sha] : r.obj("files").items()) {
    if (!sha.is_string()) r.fail(std::string("files.") + path, "must be a blob sha (a string)");
    p.files[path] = sha.get<std::string>();
  }
  p.from_branch = r.integer("from_branch", 0);
  p.score = r.opt_num("score");
}

// -- ledger.noted

void to_json(json& j, const LedgerNoted& p) {
  j = json{{kKind, to_string(p.kind)}, {"text", p.text}};
  put_opt(j, "from_branch", p.from_branch);
  put_opt(j, "from_seq", p.from_seq);
}
void from_json(const json& j, LedgerNoted& p) {
  PayloadReader r(j, LedgerNoted::kType);
  p.kind = enum_field(r, kKind, ledger_kind_from_string);
  p.text = r.str("text");
  p.from_branch = r.opt_int("from_branch");
  p.from_seq = r.opt_int("from_seq");
}

// -- compaction.*

void to_json(json& j, const CompactionRequested& p) { j = json{{kTrigger, p.trigger}}; }
void from_json(const json& j, CompactionRequested& p) {
  PayloadReader r(j, CompactionRequested::kType);
  p.trigger = r.opt_str(kTrigger, "manual");
}

constexpr const char* kSummarySha = "summary_sha";

void to_json(json& j, const CompactionProposed& p) {
  j = json::object();
  put_scope(j, p.scope);
  j[kSource] = p.source;
  put_nonempty(j, kSummarySha, p.summary_sha);
  put_nonempty(j, kError, p.error);
}
void from_json(const json& j, CompactionProposed& p) {
  PayloadReader r(j, CompactionProposed::kType);
  p.scope = read_scope(r);
  p.source = r.opt_str(kSource);
  p.summary_sha = r.opt_str(kSummarySha);
  p.error = r.opt_str(kError);
}

void to_json(json& j, const CompactionInstalled& p) {
  j = json::object();
  put_scope(j, p.scope);
  j[kOutcome] = to_string(p.outcome);
  j[kSource] = p.source;
  j[kSummary] = p.summary;
  j[kTokensAfter] = p.tokens_after;
  put_nonempty(j, "rejected", p.rejected);
  put_nonempty(j, kError, p.error);
}
void from_json(const json& j, CompactionInstalled& p) {
  PayloadReader r(j, CompactionInstalled::kType);
  p.scope = read_scope(r);
  p.outcome = enum_field(r, kOutcome, compaction_outcome_from_string);
  p.summary = p.outcome == CompactionOutcome::kCompacted ? r.str(kSummary) : r.opt_str(kSummary);
  p.source = r.opt_str(kSource);
  p.tokens_after = r.integer(kTokensAfter, 0);
  p.rejected = r.opt_str("rejected");
  p.error = r.opt_str(kError);
}

void to_json(json& j, const CompactionElided& p) {
  j = json::object();
  put_scope(j, p.scope);
  j[kOutcome] = to_string(p.outcome);
  j[kSource] = p.source;
  j[kTokensAfter] = p.tokens_after;
}
void from_json(const json& j, CompactionElided& p) {
  PayloadReader r(j, CompactionElided::kType);
  p.scope = read_scope(r);
  p.outcome = r.has(kOutcome) ? enum_field(r, kOutcome, compaction_outcome_from_string)
                              : CompactionOutcome::kCompacted;
  p.source = r.opt_str(kSource);
  p.tokens_after = r.integer(kTokensAfter, 0);
}

void to_json(json& j, const CompactionCut& p) {
  j = json::object();
  put_scope(j, p.scope);
  j[kOutcome] = to_string(p.outcome);
  j[kSource] = p.source;
  json cuts = json::array();
  for (const CompactionCut::Cut& c : p.cuts) {
    cuts.push_back({{"seq", c.seq}, {"max_tokens", c.max_tokens}, {"bytes", c.bytes}});
  }
  j["cuts"] = std::move(cuts);
  j["units"] = p.units;
  j[kTokensAfter] = p.tokens_after;
}
void from_json(const json& j, CompactionCut& p) {
  PayloadReader r(j, CompactionCut::kType);
  p.scope = read_scope(r);
  p.outcome = r.has(kOutcome) ? enum_field(r, kOutcome, compaction_outcome_from_string)
                              : CompactionOutcome::kCompacted;
  p.source = r.opt_str(kSource);
  // An entry without a positive integer seq and max_tokens is skipped: it cuts nothing.
  if (const json* cuts = r.opt_arr("cuts")) {
    for (const json& cut : *cuts) {
      if (!cut.is_object()) continue;
      auto seq = cut.find("seq"), max = cut.find("max_tokens"), bytes = cut.find("bytes");
      if (seq == cut.end() || max == cut.end() || !seq->is_number_integer() ||
          !max->is_number_integer() || seq->get<int64_t>() <= 0 || max->get<int64_t>() <= 0) {
        continue;
      }
      CompactionCut::Cut c;
      c.seq = seq->get<int64_t>();
      c.max_tokens = max->get<int64_t>();
      if (bytes != cut.end() && bytes->is_number_integer()) c.bytes = bytes->get<int64_t>();
      p.cuts.push_back(c);
    }
  }
  if (const json* units = r.opt_arr("units")) {
    for (const json& u : *units) {
      if (u.is_number_integer()) p.units.push_back(u.get<int64_t>());
    }
  }
  p.tokens_after = r.integer(kTokensAfter, 0);
}

// -- user.message

void to_json(json& j, const UserMessage& p) {
  j = json{{"content", p.content}, {kReason, p.reason}};
}
void from_json(const json& j, UserMessage& p) {
  PayloadReader r(j, UserMessage::kType);
  p.content = r.opt_str("content");
  p.reason = r.opt_str(kReason);
}

// -- goal.changed

void to_json(json& j, const GoalChanged& p) {
  j = json{{"verb", to_string(p.verb)}};
  if (p.objective) j["objective"] = *p.objective;
  if (p.status) j["status"] = to_string(*p.status);
  if (p.progress) j["progress"] = *p.progress;
  put_opt(j, "target", p.target);
}
void from_json(const json& j, GoalChanged& p) {
  PayloadReader r(j, GoalChanged::kType);
  p.verb = enum_field(r, "verb", goal_verb_from_string);
  p.objective = r.maybe_str("objective");
  if (r.has("status")) p.status = enum_field(r, "status", goal_status_from_string);
  p.progress = r.maybe_str("progress");
  p.target = r.opt_num("target");
}

// -- budget.warned

void to_json(json& j, const BudgetWarned& p) {
  j = json{{"which", p.which}, {"used", p.used}, {"limit", p.limit}};
  if (p.predicted) j["predicted"] = true;
}
void from_json(const json& j, BudgetWarned& p) {
  PayloadReader r(j, BudgetWarned::kType);
  p.which = r.str("which");
  p.used = r.num("used", 0);
  p.limit = r.num("limit", 0);
  p.predicted = r.opt_bool("predicted", false);
}

// -- run.paused / run.resumed / run.finished / run.forked

void to_json(json& j, const RunPaused& p) { j = json{{kReason, p.reason}, {kMessage, p.message}}; }
void from_json(const json& j, RunPaused& p) {
  PayloadReader r(j, RunPaused::kType);
  p.reason = r.opt_str(kReason);
  p.message = r.opt_str(kMessage);
}

void to_json(json& j, const RunResumed& p) {
  j = json{{kReason, p.reason}};
  if (p.config.is_object() && !p.config.empty()) j["config"] = p.config;
  if (p.host) j["host"] = *p.host;
}
void from_json(const json& j, RunResumed& p) {
  PayloadReader r(j, RunResumed::kType);
  p.reason = r.opt_str(kReason);
  if (const json* c = r.opt_obj("config")) p.config = *c;
  p.host = r.maybe_str("host");
}

void to_json(json& j, const SandboxDisabled& p) {
  j = json{{kReason, p.reason}, {"command", p.command}};
}
void from_json(const json& j, SandboxDisabled& p) {
  PayloadReader r(j, SandboxDisabled::kType);
  p.reason = r.opt_str(kReason);
  p.command = r.opt_str("command");
}

void to_json(json& j, const RunStopRequested& p) { j = json{{kReason, p.reason}}; }
void from_json(const json& j, RunStopRequested& p) {
  PayloadReader r(j, RunStopRequested::kType);
  p.reason = r.opt_str(kReason);
}

void to_json(json& j, const RunFinished& p) {
  j = json{{kReason, p.reason}, {kSummary, p.summary}};
}
void from_json(const json& j, RunFinished& p) {
  PayloadReader r(j, RunFinished::kType);
  p.reason = r.opt_str(kReason);
  p.summary = r.opt_str(kSummary);
}

void to_json(json& j, const RunForked& p) {
  j = json{{kRunId, p.run_id},
           {"from_run_id", p.from_run_id},
           {"from_dir", p.from_dir},
           {"at_seq", p.at_seq}};
  if (p.budget) j["budget"] = *p.budget;
}
void from_json(const json& j, RunForked& p) {
  PayloadReader r(j, RunForked::kType);
  p.run_id = r.str(kRunId);
  p.from_run_id = r.opt_str("from_run_id");
  p.from_dir = r.opt_str("from_dir");
  p.at_seq = r.integer("at_seq", 0);
  p.budget = opt_record<BudgetSpec>(r, "budget");
}

// -- the table

const std::vector<TypeInfo>& all_types() {
  static const std::vector<TypeInfo> kTypes = {
      {RunCreated::kType,
       RunCreated::kVersion,
       {"run_id", "task?", "task_dir?", "goal?{objective, metric, direction, target?}",
        "budget?{max_tool_calls?, max_wall_s?, max_tokens?, max_cost_usd?, max_gpu_s?}", "config?",
        "replay_of?"}},
      {ModelRequest::kType,
       ModelRequest::kVersion,
       {"turn?", "prompt_sha", "n_messages", "tokens_estimate"}},
      {ModelResponse::kType,
       ModelResponse::kVersion,
       {"message{content, tool_calls, thinking_blocks?, reasoning_content?, refusal?}",
        "usage{prompt_tokens, completion_tokens, cache_read_tokens?, cache_write_tokens?}",
        "cost_usd", "provider", "model", "finish_reason", "error?{kind, message, ...}", "problems?",
        "purpose?",
        "trigger?, reason?, summarized_through?, elided_through?, tokens_before? (with purpose)",
        "usage_estimated?"}},
      {LlmUsageRejected::kType,
       LlmUsageRejected::kVersion,
       {"problems", "reported", "estimated{prompt_tokens, completion_tokens}", "provider", "model",
        "purpose?"}},
      {ToolStarted::kType,
       ToolStarted::kVersion,
       {"call_id", "name", "arguments", "turn?", "index?", "source?"}},
      {ToolFinished::kType,
       ToolFinished::kVersion,
       {"call_id", "name", "ok", "output", "output_sha?", "elapsed_s", "gpu_s?", "interrupted?",
        "not_run?"}},
      {WorkspaceWritten::kType,
       WorkspaceWritten::kVersion,
       {"path", "sha (unless deleted)", "size", "deleted?", "source?"}},
      {EvalFinished::kType,
       EvalFinished::kVersion,
       {"candidate", "cache_key", "strategy", "cached", "shared?", "status", "result", "elapsed_s",
        "gpu_s", "executor?{name, where, node?}"}},
      {EvalRemeasured::kType,
       EvalRemeasured::kVersion,
       {"candidate", "cache_key", "index", "phase", "seed", "status", "result", "elapsed_s",
        "gpu_s", "executor?{name, where, node?}"}},
      {EvalSubmitted::kType,
       EvalSubmitted::kVersion,
       {"executor", "submission_id", "attempt", "cache_key", "candidate", "entrypoint",
        "num_gpus"}},
      {ExecutorJobLost::kType,
       ExecutorJobLost::kVersion,
       {"executor", "submission_id", "attempt", "reason", "logs_tail", "retry", "node?",
        "retry_node?"}},
      {ExecutorSlotQuarantined::kType,
       ExecutorSlotQuarantined::kVersion,
       {"executor", "slot", "faults_in_a_row", "last_status", "healthy_slots"}},
      {CandidateImported::kType,
       CandidateImported::kVersion,
       {"candidate", "files", "from_branch", "score?"}},
      {LedgerNoted::kType, LedgerNoted::kVersion, {"kind", "text", "from_branch?", "from_seq?"}},
      {CompactionRequested::kType, CompactionRequested::kVersion, {"trigger"}},
      {CompactionProposed::kType,
       CompactionProposed::kVersion,
       {"trigger", "reason", "summarized_through", "elided_through", "tokens_before", "source",
        "summary_sha?", "error?"}},
      {CompactionInstalled::kType,
       CompactionInstalled::kVersion,
       {"trigger", "reason", "summarized_through", "elided_through", "tokens_before", "outcome",
        "source", "summary", "tokens_after", "rejected?", "error?"}},
      {CompactionElided::kType,
       CompactionElided::kVersion,
       {"trigger", "reason", "summarized_through", "elided_through", "tokens_before", "outcome",
        "source", "tokens_after"}},
      {CompactionCut::kType,
       CompactionCut::kVersion,
       {"trigger", "reason", "summarized_through", "elided_through", "tokens_before", "outcome",
        "source", "cuts[{seq, max_tokens, bytes}]", "units", "tokens_after"}},
      {UserMessage::kType, UserMessage::kVersion, {"content", "reason"}},
      {GoalChanged::kType,
       GoalChanged::kVersion,
       {"verb", "objective?", "status?", "progress?", "target?"}},
      {BudgetWarned::kType, BudgetWarned::kVersion, {"which", "used", "limit", "predicted?"}},
      {RunPaused::kType, RunPaused::kVersion, {"reason", "message"}},
      {RunResumed::kType, RunResumed::kVersion, {"reason", "config?", "host?"}},
      {RunStopRequested::kType, RunStopRequested::kVersion, {"reason"}},
      {RunFinished::kType, RunFinished::kVersion, {"reason", "summary"}},
      {RunForked::kType,
       RunForked::kVersion,
       {"run_id", "from_run_id", "from_dir", "at_seq",
        "budget?{max_tool_calls?, max_wall_s?, max_tokens?, max_cost_usd?, max_gpu_s?}"}},
      {SandboxDisabled::kType, SandboxDisabled::kVersion, {"reason", "command"}},
  };
  return kTypes;
}

const std::vector<std::pair<std::string, std::vector<std::string>>>& fold_skipped_fields() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kSkipped = {
      {ToolFinished::kType, {"$.output"}},
      {ToolStarted::kType, {std::string("$.") + kArguments}},
  };
  return kSkipped;
}

bool is_compaction_type(std::string_view type) { return type.rfind("compaction.", 0) == 0; }

std::optional<std::string> run_id_of(const Event& e) {
  if (!is<RunCreated>(e) && !is<RunForked>(e)) return std::nullopt;
  if (!e.payload.is_object()) return std::nullopt;
  auto it = e.payload.find(kRunId);
  if (it == e.payload.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace events
}  // namespace marathon
