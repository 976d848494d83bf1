// state_to_json / state_from_json: every field of State, records as arrays to keep checkpoints
// small.
#include "core/state_json.h"

#include <cmath>
#include <stdexcept>

namespace marathon {
namespace {

#if defined(__GLIBCXX__) && defined(__x86_64__) && !defined(_GLIBCXX_DEBUG)
// A field added to State (or to a struct inside it) must be added here and to state_from_json, and
// kFoldVersion bumped: otherwise a checkpoint silently loses it. This trips when the size changes.
static_assert(sizeof(State) == 2128 && sizeof(GoalState) == 136 && sizeof(LedgerEntry) == 152 &&
                  sizeof(InFlightTool) == 88 && sizeof(CompactionLog) == 776 &&
                  sizeof(TokenRatioFit) == 104 && sizeof(TurnTracker) == 144 &&
                  sizeof(BudgetUsed) == 72 && sizeof(BudgetLimits) == 40,
              "State changed: update state_json.cc and bump kFoldVersion in core/fold.h");
#endif

double finite(double v, const char* what) {
  if (!std::isfinite(v)) throw std::invalid_argument(std::string(what) + " is not finite");
  return v;
}

json opt(const std::optional<double>& v, const char* what) {
  return v ? json(finite(*v, what)) : json(nullptr);
}

// json::dump writes a non-finite float as null, which would not read back as the same value.
const json& checked(const json& j, const char* what) {
  if (j.is_number_float()) finite(j.get<double>(), what);
  if (j.is_structured()) {
    for (const json& v : j) checked(v, what);
  }
  return j;
}

// Typed reads that name the field on failure (the path is built only then). Structured values and
// strings are moved out of the parsed document, not copied.
class In {
 public:
  explicit In(json& j) : j_(j) {}
  In(json& j, const In* parent, std::string_view key, size_t index = 0)
      : j_(j), parent_(parent), key_(key), index_(index) {}

  std::string where() const {
    if (!parent_) return "state";
    return parent_->where() +
           (key_.empty() ? "[" + std::to_string(index_) + "]" : "." + std::string(key_));
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("state JSON: " + where() + " " + what);
  }
  In at(const char* k) const {
    object();
    auto it = j_.find(k);
    if (it == j_.end()) In(j_, this, k).fail("is missing");
    return In(*it, this, k);
  }
  In item(size_t i) const {
    if (!j_.is_array() || i >= j_.size()) fail("has no element " + std::to_string(i));
    return In(j_[i], this, {}, i);
  }
  const json& raw() const { return j_; }
  json take() const { return std::move(j_); }
  int64_t i64() const {
    if (!j_.is_number_integer()) fail("is not an integer");
    return j_.get<int64_t>();
  }
  double num() const {
    if (!j_.is_number()) fail("is not a number");
    return j_.get<double>();
  }
  std::optional<double> opt_num() const {
    if (j_.is_null()) return std::nullopt;
    return num();
  }
  std::optional<bool> opt_bool() const {
    if (j_.is_null()) return std::nullopt;
    return boolean();
  }
  bool boolean() const {
    if (!j_.is_boolean()) fail("is not a boolean");
    return j_.get<bool>();
  }
  std::string str() const {
    if (!j_.is_string()) fail("is not a string");
    return std::move(j_.get_ref<std::string&>());
  }
  json& array() const {
    if (!j_.is_array()) fail("is not an array");
    return j_;
  }
  json& object() const {
    if (!j_.is_object()) fail("is not an object");
    return j_;
  }
  std::map<std::string, std::string> str_map() const {
    std::map<std::string, std::string> m;
    for (auto& [k, v] : object().items()) {
      m.emplace_hint(m.end(), k, In(v, this, k).str());
    }
    return m;
  }

 private:
  json& j_;
  const In* parent_ = nullptr;
  std::string_view key_;
  size_t index_ = 0;
};

}  // namespace

json state_to_json(const State& s) {
  const GoalState& g = s.goal;
  const BudgetLimits& l = s.limits;
  const BudgetUsed& u = s.used;
  json ledger = json::array();
  for (const LedgerEntry& e : s.ledger) {
    ledger.push_back({e.seq, to_string(e.kind), e.text, e.candidate,
                      e.correct ? json(*e.correct) : json(), opt(e.score, "ledger score"),
                      e.failure, checked(e.figures, "figures")});
  }
  json in_flight = json::array();
  for (const auto& [id, f] : s.in_flight) {
    in_flight.push_back({id, f.call_id, f.name, checked(f.arguments, "arguments"), f.started_seq});
  }
  json eval_cache = json::object();
  for (const auto& [k, v] : s.eval_cache) eval_cache[k] = checked(v, "eval_cache");
  return json{
      {"last_seq", s.last_seq},
      {"created", s.created},
      {"run_id", s.run_id},
      {"task", checked(s.task, "task")},
      {"config", checked(s.config, "config")},
      {"goal",
       {g.objective, g.metric, to_string(g.direction), opt(g.target, "goal.target"),
        to_string(g.status), g.progress, g.turns_without_progress}},
      {"limits",
       {l.max_tool_calls, finite(l.max_wall_s, "max_wall_s"), l.max_tokens,
        finite(l.max_cost_usd, "max_cost_usd"), finite(l.max_gpu_s, "max_gpu_s")}},
      {"used",
       {u.tool_calls, u.model_calls, u.prompt_tokens, u.completion_tokens,
        finite(u.cost_usd, "cost_usd"), finite(u.wall_s, "wall_s"), finite(u.gpu_s, "gpu_s"),
        u.cache_read_tokens, u.cache_write_tokens}},
      {"evaluations", s.evaluations},
      {"evaluations_executed", s.evaluations_executed},
      {"evals_since_improvement", s.evals_since_improvement},
      {"best_score", opt(s.best_score, "best_score")},
      {"best_candidate", s.best_candidate},
      {"baseline_score", opt(s.baseline_score, "baseline_score")},
      {"eval_cache", std::move(eval_cache)},
      {"confirm", checked(to_json(s.confirm), "confirm")},
      {"ledger", std::move(ledger)},
      {"workspace", s.workspace},
      {"candidates", s.candidates},
      {"in_flight", std::move(in_flight)},
      {"tool_calls_by_name", s.tool_calls_by_name},
      {"compaction", to_json(s.compaction)},
      {"token_fit", s.token_fit.to_json()},
      {"turn", s.turn.to_json()},
      {"stop_requested", s.stop_requested ? json(*s.stop_requested) : json()},
      {"paused", s.paused},
      {"done", s.done},
      {"finish_reason", s.finish_reason},
      {"budget_warnings", s.budget_warnings},
      {"sandbox_disabled", s.sandbox_disabled},
      {"sandbox_disabled_reason", s.sandbox_disabled_reason},
      {"turns", s.turns},
      {"segment_open", s.segment_open},
      {"segment_start_us", s.segment_start_us},
      {"last_event_us", s.last_event_us},
      {"wall_closed_s", finite(s.wall_closed_s, "wall_closed_s")},
      {"last_goal_turn", s.last_goal_turn},
      {"forked_from", s.forked_from},
      {"forked_at_seq", s.forked_at_seq},
      {"replay_of", s.replay_of},
  };
}

State state_from_json(json j) {
  In in(j);
  in.object();
  State s;
  s.last_seq = in.at("last_seq").i64();
  s.created = in.at("created").boolean();
  s.run_id = in.at("run_id").str();
  s.task = std::move(in.at("task").object());
  s.config = std::move(in.at("config").object());

  In g = in.at("goal");
  s.goal.objective = g.item(0).str();
  s.goal.metric = g.item(1).str();
  try {
    s.goal.direction = direction_from_string(g.item(2).str());
    s.goal.status = goal_status_from_string(g.item(4).str());
  } catch (const std::invalid_argument& e) {
    g.fail(e.what());
  }
  s.goal.target = g.item(3).opt_num();
  s.goal.progress = g.item(5).str();
  s.goal.turns_without_progress = static_cast<int>(g.item(6).i64());

  In l = in.at("limits");
  s.limits.max_tool_calls = l.item(0).i64();
  s.limits.max_wall_s = l.item(1).num();
  s.limits.max_tokens = l.item(2).i64();
  s.limits.max_cost_usd = l.item(3).num();
  s.limits.max_gpu_s = l.item(4).num();

  In u = in.at("used");
  s.used.tool_calls = u.item(0).i64();
  s.used.model_calls = u.item(1).i64();
  s.used.prompt_tokens = u.item(2).i64();
  s.used.completion_tokens = u.item(3).i64();
  s.used.cost_usd = u.item(4).num();
  s.used.wall_s = u.item(5).num();
  s.used.gpu_s = u.item(6).num();
  s.used.cache_read_tokens = u.item(7).i64();
  s.used.cache_write_tokens = u.item(8).i64();

  s.evaluations = in.at("evaluations").i64();
  s.evaluations_executed = in.at("evaluations_executed").i64();
  s.evals_since_improvement = in.at("evals_since_improvement").i64();
  s.best_score = in.at("best_score").opt_num();
  s.best_candidate = in.at("best_candidate").str();
  s.baseline_score = in.at("baseline_score").opt_num();
  for (auto& [k, v] : in.at("eval_cache").object().items()) {
    s.eval_cache.emplace_hint(s.eval_cache.end(), k, std::move(v));
  }

  {
    In confirm = in.at("confirm");
    try {
      s.confirm = confirmations_from_json(confirm.raw());
    } catch (const std::exception& e) {
      confirm.fail(e.what());
    }
  }

  In ledger = in.at("ledger");
  for (size_t i = 0; i < ledger.array().size(); ++i) {
    In e = ledger.item(i);
    LedgerEntry x;
    x.seq = e.item(0).i64();
    x.kind = ledger_kind_from_string(e.item(1).str());
    x.text = e.item(2).str();
    x.candidate = e.item(3).str();
    x.correct = e.item(4).opt_bool();
    x.score = e.item(5).opt_num();
    x.failure = e.item(6).str();
    x.figures = e.item(7).take();
    s.ledger.push_back(std::move(x));
  }
  s.workspace = in.at("workspace").str_map();
  In candidates = in.at("candidates");
  for (auto& [k, v] : candidates.object().items()) {
    s.candidates.emplace_hint(s.candidates.end(), k, In(v, &candidates, k).str_map());
  }
  In in_flight = in.at("in_flight");
  for (size_t i = 0; i < in_flight.array().size(); ++i) {
    In f = in_flight.item(i);
    InFlightTool t;
    t.call_id = f.item(1).str();
    t.name = f.item(2).str();
    t.arguments = f.item(3).take();
    t.started_seq = f.item(4).i64();
    s.in_flight.emplace(f.item(0).str(), std::move(t));
  }
  In by_name = in.at("tool_calls_by_name");
  for (auto& [k, v] : by_name.object().items()) {
    s.tool_calls_by_name.emplace_hint(s.tool_calls_by_name.end(), k, In(v, &by_name, k).i64());
  }
  // The loop's projections: their own JSON forms, read with nlohmann's checks.
  for (const char* key : {"compaction", "token_fit", "turn"}) {
    In part = in.at(key);
    try {
      if (std::string_view(key) == "compaction") {
        s.compaction = compaction_log_from_json(part.raw());
      } else if (std::string_view(key) == "token_fit") {
        s.token_fit = TokenRatioFit::from_json(part.raw());
      } else {
        s.turn = TurnTracker::from_json(part.raw());
      }
    } catch (const std::exception& e) {
      part.fail(e.what());
    }
  }
  if (In stop = in.at("stop_requested"); !stop.raw().is_null()) s.stop_requested = stop.str();
  s.paused = in.at("paused").boolean();
  s.done = in.at("done").boolean();
  s.finish_reason = in.at("finish_reason").str();
  In warnings = in.at("budget_warnings");
  for (size_t i = 0; i < warnings.array().size(); ++i) {
    s.budget_warnings.push_back(warnings.item(i).str());
  }
  In disabled = in.at("sandbox_disabled");
  for (size_t i = 0; i < disabled.array().size(); ++i) {
    s.sandbox_disabled.push_back(disabled.item(i).i64());
  }
  s.sandbox_disabled_reason = in.at("sandbox_disabled_reason").str();
  s.turns = in.at("turns").i64();
  s.segment_open = in.at("segment_open").boolean();
  s.segment_start_us = in.at("segment_start_us").i64();
  s.last_event_us = in.at("last_event_us").i64();
  s.wall_closed_s = in.at("wall_closed_s").num();
  s.last_goal_turn = in.at("last_goal_turn").i64();
  s.forked_from = in.at("forked_from").str();
  s.forked_at_seq = in.at("forked_at_seq").i64();
  s.replay_of = in.at("replay_of").str();
  return s;
}

}  // namespace marathon
