// fold: the run's State as a pure function of its events (docs/event-log.md, "fold effect").
#include "core/fold.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace marathon {
namespace {

// Typed access to a payload, with errors that name the event and the field.
class Payload {
 public:
  explicit Payload(const Event& e) : Payload(e.payload, e.seq, e.type) {}
  Payload(const json& j, int64_t seq, std::string where)
      : j_(j), seq_(seq), where_(std::move(where)) {
    if (!j.is_object()) fail("payload", "is not an object");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw std::invalid_argument("event seq " + std::to_string(seq_) + " (" + where_ + "): field '" +
                                field + "' " + what);
  }
  Payload sub(const json& j, const std::string& name) const {
    return Payload(j, seq_, where_ + " " + name);
  }

  const json* find(const char* k) const {
    auto it = j_.find(k);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  std::string str(const char* k) const {
    const json* v = find(k);
    if (!v) fail(k, "is missing");
    if (!v->is_string()) fail(k, "is not a string");
    return v->get<std::string>();
  }
  std::string opt_str(const char* k, const std::string& def = "") const {
    const json* v = find(k);
    if (!v) return def;
    if (!v->is_string()) fail(k, "is not a string");
    return v->get<std::string>();
  }
  std::optional<double> opt_num(const char* k) const {
    const json* v = find(k);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(k, "is not a number");
    return v->get<double>();
  }
  // A count or seq: a number int64 holds (a fraction is cut off, as always).
  std::optional<int64_t> opt_int(const char* k) const {
    std::optional<double> v = opt_num(k);
    if (!v) return std::nullopt;
    if (!(*v >= -0x1p63 && *v < 0x1p63)) fail(k, "is out of range");
    return static_cast<int64_t>(*v);
  }
  bool opt_bool(const char* k, bool def) const {
    const json* v = find(k);
    if (!v) return def;
    if (!v->is_boolean()) fail(k, "is not a boolean");
    return v->get<bool>();
  }
  const json& obj(const char* k) const {
    const json* v = find(k);
    if (!v) fail(k, "is missing");
    if (!v->is_object()) fail(k, "is not an object");
    return *v;
  }
  const json* opt_obj(const char* k) const {
    const json* v = find(k);
    if (v && !v->is_object()) fail(k, "is not an object");
    return v;
  }

 private:
  const json& j_;
  int64_t seq_;
  std::string where_;
};

// Seconds from `from_us` to `to_us`, 0 when `to_us` is earlier; no overflow for any two times.
double seconds_between(int64_t from_us, int64_t to_us) {
  if (to_us <= from_us) return 0;
  return static_cast<double>(static_cast<uint64_t>(to_us) - static_cast<uint64_t>(from_us)) / 1e6;
}

void close_segment(State& s, int64_t at_us) {
  if (s.segment_open) s.wall_closed_s += seconds_between(s.segment_start_us, at_us);
  s.segment_open = false;
}

void open_segment(State& s, int64_t at_us) {
  s.segment_open = true;
  s.segment_start_us = at_us;
}

void on_created(State& s, const Event& e, const Payload& p) {
  s.created = true;
  s.run_id = p.str("run_id");
  if (const json* t = p.opt_obj("task")) s.task = *t;
  if (const json* c = p.opt_obj("config")) s.config = *c;
  if (const json* d = p.find("task_dir")) s.config["task_dir"] = *d;
  if (const json* g = p.opt_obj("goal")) {
    Payload gp = p.sub(*g, "goal");
    s.goal.objective = gp.opt_str("objective");
    s.goal.metric = gp.opt_str("metric");
    s.goal.direction = gp.opt_str("direction", "max");
    if (s.goal.direction != "max" && s.goal.direction != "min") {
      p.fail("goal.direction", "must be 'max' or 'min'");
    }
    s.goal.target = gp.opt_num("target");
  }
  if (const json* b = p.opt_obj("budget")) {
    Payload bp = p.sub(*b, "budget");
    if (auto v = bp.opt_int("max_tool_calls")) s.limits.max_tool_calls = *v;
    if (auto v = bp.opt_num("max_wall_s")) s.limits.max_wall_s = *v;
    if (auto v = bp.opt_int("max_tokens")) s.limits.max_tokens = *v;
    if (auto v = bp.opt_num("max_cost_usd")) s.limits.max_cost_usd = *v;
    if (auto v = bp.opt_num("max_gpu_s")) s.limits.max_gpu_s = *v;
  }
  open_segment(s, e.recorded_at_us);
}

void on_model_response(State& s, const Payload& p) {
  s.used.model_calls += 1;
  double prompt = 0, completion = 0;
  if (const json* u = p.opt_obj("usage")) {
    Payload up = p.sub(*u, "usage");
    prompt = up.opt_num("prompt_tokens").value_or(0);
    completion = up.opt_num("completion_tokens").value_or(0);
    add_cache_tokens(s.used, up.opt_num("cache_read_tokens").value_or(0),
                     up.opt_num("cache_write_tokens").value_or(0));
  }
  // Spend only grows: a negative or absurd count in the log (written by an older runtime that
  // trusted the provider) adds nothing or is capped.
  add_model_spend(s.used, prompt, completion, p.opt_num("cost_usd").value_or(0));
}

void on_tool_finished(State& s, const Event& e, const Payload& p) {
  std::string call_id = p.str("call_id");
  ToolCallRecord r;
  r.call_id = call_id;
  r.name = p.opt_str("name");
  r.finished_seq = e.seq;
  r.ok = p.opt_bool("ok", false);
  if (auto it = s.in_flight.find(call_id); it != s.in_flight.end()) {
    r.started_seq = it->second.started_seq;
    if (r.name.empty()) r.name = it->second.name;
    s.in_flight.erase(it);
  }
  // A call the run ended before (not_run: the budget or the target stopped it) used nothing.
  if (!p.opt_bool("not_run", false)) s.used.tool_calls += 1;
  if (auto g = p.opt_num("gpu_s")) s.used.gpu_s += *g;
  s.tool_history.push_back(std::move(r));
}

bool better(const State& s, double score) {
  if (!s.best_score) return true;
  return s.goal.direction == "min" ? score < *s.best_score : score > *s.best_score;
}

std::string failure_of(const std::string& status, const json& result, bool correct,
                       bool violations) {
  std::string why;
  if (status != "ok") {
    why = status;
  } else if (!correct) {
    why = "incorrect";
  } else if (violations) {
    why = "rule violations";
  }
  for (const char* k : {"failure", "error"}) {
    if (!why.empty() && result.contains(k) && result[k].is_string()) {
      why += ": " + result[k].get<std::string>();
      break;
    }
  }
  if (why == "rule violations") why += ": " + result["violations"].dump();
  return why;
}

void on_eval_finished(State& s, const Event& e, const Payload& p) {
  std::string candidate = p.str("candidate");
  std::string status = p.opt_str("status", "ok");
  json result = p.find("result") ? p.obj("result") : json::object();
  bool cached = p.opt_bool("cached", false);

  s.evaluations += 1;
  if (!cached) {
    s.evaluations_executed += 1;
    if (auto g = p.opt_num("gpu_s")) s.used.gpu_s += *g;
  }
  std::string key = p.opt_str("cache_key");
  if (!key.empty()) {
    s.eval_cache[key] =
        json{{"candidate", candidate}, {"status", status}, {"result", result}, {"seq", e.seq}};
  }
  s.candidates[candidate] = s.workspace;

  Payload rp = p.sub(result, "result");
  bool correct = rp.opt_bool("correct", false);
  std::optional<double> score = rp.opt_num("score");
  const json* viol = rp.find("violations");
  bool has_violations =
      viol && !(viol->is_array() && viol->empty()) && !(viol->is_object() && viol->empty());
  if (correct && !s.baseline_score) {
    if (auto b = rp.opt_num("baseline_score")) s.baseline_score = b;
  }

  bool counts = status == "ok" && correct && !has_violations && score.has_value();
  if (counts && better(s, *score)) {
    s.best_score = score;
    s.best_candidate = candidate;
    s.evals_since_improvement = 0;
    s.goal.turns_without_progress = 0;
  } else {
    s.evals_since_improvement += 1;
  }

  LedgerEntry l;
  l.seq = e.seq;
  l.kind = "attempt";
  l.text = p.opt_str("strategy");
  l.candidate = candidate;
  l.correct = correct;
  l.score = score;
  l.failure = failure_of(status, result, correct, has_violations);
  if (const json* m = rp.opt_obj("metrics")) l.figures = *m;
  if (const json* f = rp.opt_obj("figures")) l.figures.update(*f);
  s.ledger.push_back(std::move(l));
}

void on_goal_changed(State& s, const Payload& p) {
  std::string verb = p.str("verb");
  GoalState& g = s.goal;
  static const std::unordered_map<std::string, std::string> kStatusOf = {
      {"set", "active"},    {"pause", "paused"},      {"resume", "active"},
      {"clear", "cleared"}, {"auto_pause", "paused"}, {"done", "done"}};
  if (verb == "set") {
    g.objective = p.opt_str("objective", g.objective);
    g.progress.clear();
    g.turns_without_progress = 0;
  } else if (verb == "edit") {
    g.objective = p.opt_str("objective", g.objective);
  } else if (verb == "resume") {
    g.turns_without_progress = 0;
  } else if (verb == "clear") {
    g.objective.clear();
  } else if (!kStatusOf.count(verb)) {
    p.fail("verb", "is '" + verb + "', not one of set/edit/pause/resume/clear/auto_pause/done");
  }
  if (auto it = kStatusOf.find(verb); it != kStatusOf.end()) g.status = it->second;
  g.status = p.opt_str("status", g.status);
  if (p.find("progress")) g.progress = p.str("progress");
  if (auto t = p.opt_num("target")) g.target = t;
}

void on_compaction_installed(State& s, const Event& e, const Payload& p) {
  std::string outcome = p.str("outcome");
  s.pending_compaction_request = 0;
  if (outcome == "compacted") {
    s.compactions += 1;
    Summary sum;
    sum.text = p.str("summary");
    sum.summarized_through = p.opt_int("summarized_through").value_or(0);
    sum.installed_seq = e.seq;
    s.summary = std::move(sum);
  } else if (outcome == "noop") {
    s.last_compaction_noop_seq = e.seq;
  } else if (outcome != "failed") {
    p.fail("outcome", "is '" + outcome + "', not compacted/noop/failed");
  }
}

}  // namespace

void apply(State& s, const Event& e) {
  Payload p(e);
  const std::string& t = e.type;
  if (t == ev::kRunCreated) {
    on_created(s, e, p);
  } else if (t == ev::kModelRequest) {
    s.turns += 1;
    int64_t turn = p.opt_int("turn").value_or(s.last_goal_turn + 1);
    if (turn != s.last_goal_turn) s.goal.turns_without_progress += 1;
    s.last_goal_turn = turn;
  } else if (t == ev::kModelResponse) {
    on_model_response(s, p);
  } else if (t == ev::kToolStarted) {
    InFlightTool f;
    f.call_id = p.str("call_id");
    f.name = p.str("name");
    f.arguments = e.payload.value("arguments", json());
    f.started_seq = e.seq;
    s.in_flight[f.call_id] = std::move(f);
  } else if (t == ev::kToolFinished) {
    on_tool_finished(s, e, p);
  } else if (t == ev::kWorkspaceWritten) {
    std::string path = p.str("path");
    if (p.opt_bool("deleted", false)) {
      s.workspace.erase(path);
    } else {
      s.workspace[path] = p.str("sha");
    }
  } else if (t == ev::kEvalFinished) {
    on_eval_finished(s, e, p);
  } else if (t == ev::kLedgerNoted) {
    LedgerEntry l;
    l.seq = e.seq;
    l.kind = p.str("kind");
    l.text = p.str("text");
    s.ledger.push_back(std::move(l));
  } else if (t == ev::kCompactionRequested) {
    s.pending_compaction_request = e.seq;
  } else if (t == ev::kCompactionInstalled) {
    on_compaction_installed(s, e, p);
  } else if (t == ev::kGoalChanged) {
    on_goal_changed(s, p);
  } else if (t == ev::kBudgetWarned) {
    std::string which = p.str("which");
    if (std::find(s.budget_warnings.begin(), s.budget_warnings.end(), which) ==
        s.budget_warnings.end()) {
      s.budget_warnings.push_back(which);
    }
  } else if (t == ev::kRunPaused) {
    close_segment(s, e.recorded_at_us);
    s.paused = true;
  } else if (t == ev::kRunResumed) {
    close_segment(s, s.last_event_us);  // a crash ends a segment at its last event
    open_segment(s, e.recorded_at_us);
    s.paused = false;
    // Settings given to `marathon resume` (e.g. model_timeout_s) override the run's config from
    // here on, and later resumes keep them.
    if (const json* c = p.opt_obj("config")) {
      for (const auto& [k, v] : c->items()) s.config[k] = v;
    }
  } else if (t == ev::kRunFinished) {
    close_segment(s, e.recorded_at_us);
    s.done = true;
    s.finish_reason = p.opt_str("reason");
  } else if (t == ev::kSandboxDisabled) {
    s.sandbox_disabled.push_back(e.seq);
    s.sandbox_disabled_reason = p.opt_str("reason");
  } else if (t == ev::kRunForked) {
    s.forked_from = p.opt_str("from_run_id");
    s.forked_at_seq = p.opt_int("at_seq").value_or(0);
    s.run_id = p.str("run_id");
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
