// fold: the run's State as a pure function of its events (docs/event-log.md, "fold effect").
#include "core/fold.h"

#include <algorithm>
#include <stdexcept>

#include "core/eval_result.h"

namespace marathon {
namespace {

using namespace events;

// Seconds from `from_us` to `to_us`, 0 when `to_us` is earlier; no overflow for any two times.
double seconds_between(int64_t from_us, int64_t to_us) {
  if (to_us <= from_us) return 0;
  return static_cast<double>(static_cast<uint64_t>(to_us) - static_cast<uint64_t>(from_us)) / 1e6;
}

void close_segment(State& s, int64_t at_us) {
  if (s.segment_open) s.wall_closed_s += seconds_between(s.segment_start_us, at_us);
  s.segment_open = false;
}

// A segment's wall time runs from its first event to its latest (last_event_us): the latest of
// this segment, not of the log, so that a run resumed on a machine whose clock is behind the last
// one's is not charged the difference.
void open_segment(State& s, int64_t at_us) {
  s.segment_open = true;
  s.segment_start_us = at_us;
  s.last_event_us = at_us;
}

// The limits a budget sets (run.created, or a fork's replacements in run.forked).
void apply_budget(State& s, const BudgetSpec& b) {
  if (b.max_tool_calls) s.limits.max_tool_calls = *b.max_tool_calls;
  if (b.max_wall_s) s.limits.max_wall_s = *b.max_wall_s;
  if (b.max_tokens) s.limits.max_tokens = *b.max_tokens;
  if (b.max_cost_usd) s.limits.max_cost_usd = *b.max_cost_usd;
  if (b.max_gpu_s) s.limits.max_gpu_s = *b.max_gpu_s;
}

void on_created(State& s, const Event& e, const RunCreated& p) {
  s.created = true;
  s.run_id = p.run_id;
  s.task = p.task;
  s.config = p.config;
  if (p.task_dir) s.config["task_dir"] = *p.task_dir;
  s.confirm.settings = confirm_settings(s.config);
  if (p.replay_of) s.replay_of = p.replay_of->run_id;
  if (p.goal) {
    s.goal.objective = p.goal->objective;
    s.goal.metric = p.goal->metric;
    s.goal.direction = p.goal->direction;
    s.goal.target = p.goal->target;
  }
  if (p.budget) apply_budget(s, *p.budget);
  open_segment(s, e.recorded_at_us);
}

void on_model_response(State& s, const ModelResponse& p) {
  s.used.model_calls += 1;
  // Spend only grows: a negative or absurd count in the log (written by an older runtime that
  // trusted the provider) adds nothing or is capped.
  add_model_spend(s.used, static_cast<double>(p.usage.prompt_tokens),
                  static_cast<double>(p.usage.completion_tokens), p.cost_usd);
  add_cache_tokens(s.used, static_cast<double>(p.usage.cache_read_tokens),
                   static_cast<double>(p.usage.cache_write_tokens));
}

void on_tool_finished(State& s, const ToolFinished& p) {
  std::string name = p.name;
  if (auto it = s.in_flight.find(p.call_id); it != s.in_flight.end()) {
    if (name.empty()) name = it->second.name;
    s.in_flight.erase(it);
  }
  // A call the run ended before (not_run: the budget or the target stopped it) used nothing.
  if (!p.not_run) s.used.tool_calls += 1;
  if (p.gpu_s) s.used.gpu_s += *p.gpu_s;
  if (!name.empty()) s.tool_calls_by_name[name] += 1;
}

std::string failure_of(EvalStatus status, const EvalResult& r) {
  std::string why;
  if (status != EvalStatus::kOk) {
    why = to_string(status);
  } else if (!r.correct) {
    why = "incorrect";
  } else if (r.has_violations()) {
    why = "rule violations";
  }
  if (!why.empty()) {
    if (!r.failure.empty()) {
      why += ": " + r.failure;
    } else if (!r.error.empty()) {
      why += ": " + r.error;
    }
  }
  if (why == "rule violations") why += ": " + r.violations.dump();
  return why;
}

void on_eval_finished(State& s, const Event& e, const EvalFinished& p) {
  EvalResult r;
  try {
    r = read_eval_result(p.result);
  } catch (const PayloadError& ex) {
    throw PayloadError(e.type, "result." + ex.field(), ex.problem());
  }
  s.evaluations += 1;
  if (!p.cached) {
    s.evaluations_executed += 1;
    s.used.gpu_s += p.gpu_s;
  }
  if (!p.cache_key.empty()) {
    s.eval_cache[p.cache_key] = to_json(EvalCacheEntry{p.candidate, p.status, p.result, e.seq});
  }
  s.candidates[p.candidate] = s.workspace;

  if (r.correct && !s.baseline_score) s.baseline_score = r.baseline_score;

  bool counts =
      p.status == EvalStatus::kOk && r.correct && !r.has_violations() && r.score.has_value();
  // With confirmation on, an improvement is announced by the re-measurements (eval.remeasured).
  if (!confirm_on_evaluation(s, p, e.seq, r)) {
    s.evals_since_improvement += 1;
  } else if (counts && improves(s.goal.direction, *r.score, s.best_score)) {
    s.best_score = r.score;
    s.best_candidate = p.candidate;
    s.evals_since_improvement = 0;
    s.goal.turns_without_progress = 0;
  } else {
    s.evals_since_improvement += 1;
  }

  LedgerEntry l;
  l.seq = e.seq;
  l.kind = LedgerKind::kAttempt;
  l.text = p.strategy;
  l.candidate = p.candidate;
  l.correct = r.correct;
  l.score = r.score;
  l.failure = failure_of(p.status, r);
  l.figures = r.metrics;
  l.figures.update(r.figures);
  s.ledger.push_back(std::move(l));
}

void on_eval_remeasured(const Event& e, State& s, const EvalRemeasured& p) {
  EvalResult r;
  try {
    r = read_eval_result(p.result);
  } catch (const PayloadError& ex) {
    throw PayloadError(e.type, "result." + ex.field(), ex.problem());
  }
  confirm_on_remeasured(s, p, r);
}

void on_goal_changed(State& s, const GoalChanged& p) {
  GoalState& g = s.goal;
  switch (p.verb) {
    case GoalVerb::kSet:
      g.objective = p.objective.value_or(g.objective);
      g.progress.clear();
      g.turns_without_progress = 0;
      break;
    case GoalVerb::kEdit:
      g.objective = p.objective.value_or(g.objective);
      break;
    case GoalVerb::kResume:
      g.turns_without_progress = 0;
      break;
    case GoalVerb::kClear:
      g.objective.clear();
      break;
    default:
      break;
  }
  if (auto st = status_after(p.verb)) g.status = *st;
  if (p.status) g.status = *p.status;
  if (p.progress) g.progress = *p.progress;
  if (p.target) g.target = p.target;
}

// Every type but model.response (apply() reads that one once for every part of the fold).
void apply_typed(State& s, const Event& e) {
  if (!e.payload.is_object()) throw PayloadError(e.type, "payload", "is not an object");
  if (is<RunCreated>(e)) {
    on_created(s, e, e.payload.get<RunCreated>());
  } else if (is<ModelRequest>(e)) {
    s.turns += 1;
    int64_t turn = e.payload.get<ModelRequest>().turn.value_or(s.last_goal_turn + 1);
    if (turn != s.last_goal_turn) s.goal.turns_without_progress += 1;
    s.last_goal_turn = turn;
  } else if (is<ToolStarted>(e)) {
    auto p = e.payload.get<ToolStarted>();
    InFlightTool f;
    f.call_id = p.call_id;
    f.name = p.name;
    f.arguments = std::move(p.arguments);
    f.started_seq = e.seq;
    s.in_flight[f.call_id] = std::move(f);
  } else if (is<ToolFinished>(e)) {
    on_tool_finished(s, e.payload.get<ToolFinished>());
  } else if (is<WorkspaceWritten>(e)) {
    auto p = e.payload.get<WorkspaceWritten>();
    if (p.deleted) {
      s.workspace.erase(p.path);
    } else {
      s.workspace[p.path] = p.sha;
    }
  } else if (is<EvalFinished>(e)) {
    on_eval_finished(s, e, e.payload.get<EvalFinished>());
  } else if (is<EvalRemeasured>(e)) {
    on_eval_remeasured(e, s, e.payload.get<EvalRemeasured>());
  } else if (is<CandidateImported>(e)) {
    auto p = e.payload.get<CandidateImported>();
    s.candidates[p.candidate] = std::move(p.files);
  } else if (is<LedgerNoted>(e)) {
    auto p = e.payload.get<LedgerNoted>();
    LedgerEntry l;
    l.seq = e.seq;
    l.kind = p.kind;
    l.text = p.text;
    s.ledger.push_back(std::move(l));
  } else if (is<GoalChanged>(e)) {
    on_goal_changed(s, e.payload.get<GoalChanged>());
  } else if (is<BudgetWarned>(e)) {
    std::string which = e.payload.get<BudgetWarned>().which;
    if (std::find(s.budget_warnings.begin(), s.budget_warnings.end(), which) ==
        s.budget_warnings.end()) {
      s.budget_warnings.push_back(which);
    }
  } else if (is<RunPaused>(e)) {
    close_segment(s, e.recorded_at_us);
    s.paused = true;
  } else if (is<RunStopRequested>(e)) {
    s.stop_requested = e.payload.get<RunStopRequested>().reason;
  } else if (is<RunResumed>(e)) {
    s.stop_requested.reset();           // asked of an earlier session
    close_segment(s, s.last_event_us);  // a crash ends a segment at its last event
    open_segment(s, e.recorded_at_us);
    s.paused = false;
    // Settings given to `marathon resume` (e.g. model_timeout_s) override the run's config from
    // here on, and later resumes keep them.
    const RunResumed p = e.payload.get<RunResumed>();
    for (const auto& [k, v] : p.config.items()) s.config[k] = v;
  } else if (is<RunFinished>(e)) {
    close_segment(s, e.recorded_at_us);
    s.done = true;
    s.finish_reason = e.payload.get<RunFinished>().reason;
  } else if (is<SandboxDisabled>(e)) {
    s.sandbox_disabled.push_back(e.seq);
    s.sandbox_disabled_reason = e.payload.get<SandboxDisabled>().reason;
  } else if (is<RunForked>(e)) {
    auto p = e.payload.get<RunForked>();
    // The fork's wall time counts from its own start: the original's segment ends at the last
    // event copied, not when the fork was made.
    close_segment(s, s.last_event_us);
    open_segment(s, e.recorded_at_us);
    s.forked_from = p.from_run_id;
    s.forked_at_seq = p.at_seq;
    s.run_id = p.run_id;
    if (p.budget) apply_budget(s, *p.budget);
  }
}

}  // namespace

void apply(State& s, const Event& e) {
  try {
    if (is<ModelResponse>(e)) {
      // The largest payload (the model's message): read once for every part of the fold.
      if (!e.payload.is_object()) throw PayloadError(e.type, "payload", "is not an object");
      const ModelResponse p = e.payload.get<ModelResponse>();
      on_model_response(s, p);
      apply_compaction_response(s.compaction, e.seq, p);
      s.token_fit.add_response(p);
      s.turn.apply_response(p);
    } else {
      apply_typed(s, e);
      apply_compaction_event(s.compaction, e);
      s.token_fit.add(e);
      s.turn.apply(e);
    }
  } catch (const std::exception& ex) {
    throw_payload_error(e, ex);
  }
  // Unknown types: ignored (forward compatible within a schema version).

  s.last_seq = e.seq;
  s.last_event_us = std::max(s.last_event_us, e.recorded_at_us);
  s.used.wall_s = s.wall_closed_s;
  if (s.segment_open) s.used.wall_s += seconds_between(s.segment_start_us, s.last_event_us);
}

State fold(const std::vector<Event>& events) {
  State s;
  for (const Event& e : events) apply(s, e);
  return s;
}

}  // namespace marathon
