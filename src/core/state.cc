// to_json(State): the `marathon status --json` view.
#include "core/state.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace marathon {
namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json opt(const std::optional<bool>& v) { return v ? json(*v) : json(nullptr); }

json limit_or_null(double v) { return v > 0 ? json(v) : json(nullptr); }

}  // namespace

json to_json(const EvalCacheEntry& e) {
  return json{{"candidate", e.candidate},
              {"status", to_string(e.status)},
              {"result", e.result},
              {"seq", e.seq}};
}

std::optional<EvalCacheEntry> read_eval_cache_entry(const json& j) {
  if (!j.is_object()) return std::nullopt;
  try {
    EvalCacheEntry e;
    e.candidate = j.value("candidate", "");
    e.status = eval_status_from_string(j.value("status", ""));
    auto r = j.find("result");
    if (r == j.end() || !r->is_object()) return std::nullopt;
    e.result = *r;
    e.seq = j.value("seq", int64_t{0});
    return e;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

json installed_summary(const State& s) {
  return s.compaction.installed_seq != 0 ? json(s.compaction.summary) : json(nullptr);
}

json to_json(const State& s) {
  json ledger = json::array();
  for (const LedgerEntry& l : s.ledger) {
    json j{{"seq", l.seq}, {"kind", to_string(l.kind)}, {"text", l.text}};
    if (l.kind == LedgerKind::kAttempt) {
      j["candidate"] = l.candidate;
      j["correct"] = opt(l.correct);
      j["score"] = opt(l.score);
      j["failure"] = l.failure;
      j["figures"] = l.figures;
    }
    ledger.push_back(std::move(j));
  }
  json in_flight = json::array();
  for (const auto& [id, f] : s.in_flight) {
    in_flight.push_back({{"call_id", id},
                         {"name", f.name},
                         {"arguments", f.arguments},
                         {"started_seq", f.started_seq}});
  }
  json summary = nullptr;
  if (s.compaction.installed_seq != 0) {
    summary = {{"text", s.compaction.summary},
               {"summarized_through", s.compaction.summarized_through},
               {"installed_seq", s.compaction.installed_seq}};
  }
  const BudgetUsed& u = s.used;
  const BudgetLimits& l = s.limits;
  return json{
      {"run_id", s.run_id},
      {"events", s.last_seq},
      {"tool_calls", u.tool_calls},
      {"model_calls", u.model_calls},
      {"turns", s.turns},
      {"evaluations", s.evaluations},
      {"evaluations_executed", s.evaluations_executed},
      {"evals_since_improvement", s.evals_since_improvement},
      {"best_score", opt(s.best_score)},
      {"best_candidate", s.best_candidate.empty() ? json(nullptr) : json(s.best_candidate)},
      {"baseline_score", opt(s.baseline_score)},
      // The best's re-measurements and spread, ties, what is owed, the verdict on the baseline.
      {"confirmation", confirmation_json(s)},
      {"done", s.done},
      {"paused", s.paused},
      {"finish_reason", s.finish_reason},
      {"goal",
       {{"objective", s.goal.objective},
        {"metric", s.goal.metric},
        {"direction", to_string(s.goal.direction)},
        {"target", opt(s.goal.target)},
        {"status", to_string(s.goal.status)},
        {"progress", s.goal.progress},
        {"turns_without_progress", s.goal.turns_without_progress}}},
      {"budget",
       {{"used",
         {{"tool_calls", u.tool_calls},
          {"model_calls", u.model_calls},
          {"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"tokens", u.prompt_tokens + u.completion_tokens},
          {"cache_read_tokens", u.cache_read_tokens},
          {"cache_write_tokens", u.cache_write_tokens},
          {"cost_usd", u.cost_usd},
          {"wall_s", u.wall_s},
          {"gpu_s", u.gpu_s}}},
        {"limits",
         {{"max_tool_calls", l.max_tool_calls > 0 ? json(l.max_tool_calls) : json(nullptr)},
          {"max_wall_s", limit_or_null(l.max_wall_s)},
          {"max_tokens", l.max_tokens > 0 ? json(l.max_tokens) : json(nullptr)},
          {"max_cost_usd", limit_or_null(l.max_cost_usd)},
          {"max_gpu_s", limit_or_null(l.max_gpu_s)}}},
        {"warnings", s.budget_warnings},
        // `used` is what the budgets count; a replay counts the original's spend there again.
        {"replayed", !s.replay_of.empty()},
        {"spent_by_this_run", own_spend_json(s)}}},
      {"in_flight", in_flight},
      {"ledger", ledger},
      {"workspace_files", s.workspace.size()},
      {"candidates", s.candidates.size()},
      {"compactions", s.compaction.compactions},
      {"summary", summary},
      {"pending_compaction_request", s.compaction.pending_request_seq},
      {"forked_from", s.forked_from.empty() ? json(nullptr) : json(s.forked_from)},
      {"replay_of", s.replay_of.empty() ? json(nullptr) : json(s.replay_of)},
      {"sandbox",
       {{"enabled", s.sandbox_disabled.empty()},
        {"disabled_at", s.sandbox_disabled},
        {"disabled_reason", s.sandbox_disabled_reason}}},
      {"task", s.task},
      {"config", s.config},
  };
}

BudgetUsed own_spend(const State& s) {
  BudgetUsed own = s.used;
  if (!s.replay_of.empty()) {
    own.model_calls = own.prompt_tokens = own.completion_tokens = 0;
    own.cache_read_tokens = own.cache_write_tokens = 0;
    own.cost_usd = own.gpu_s = 0;
  }
  return own;
}

json own_spend_json(const State& s) {
  const BudgetUsed own = own_spend(s);
  return {{"model_calls", own.model_calls},
          {"tokens", own.prompt_tokens + own.completion_tokens},
          {"cost_usd", own.cost_usd},
          {"gpu_s", own.gpu_s}};
}

std::string replay_spend_note(const State& s) {
  if (s.replay_of.empty()) return "";
  const BudgetUsed& u = s.used;
  const BudgetUsed own = own_spend(s);
  return fmt::format(
      "replayed from {}: the original spent ${:.4f}, {} tokens in {} model calls, {:.1f} s GPU "
      "(the budget figures count them again, so the replay stops where the original did); this "
      "replay: ${:.4g}, {} tokens, {} model calls",
      s.replay_of, u.cost_usd, u.prompt_tokens + u.completion_tokens, u.model_calls, u.gpu_s,
      own.cost_usd, own.prompt_tokens + own.completion_tokens, own.model_calls);
}

namespace {

double spend_term(double v) {
  return std::isfinite(v) && v > 0 ? std::min(v, kMaxSpendPerResponse) : 0;
}

int64_t saturating_add(int64_t a, double b) {
  const double room = static_cast<double>(INT64_MAX / 2) - static_cast<double>(a);
  return b >= room ? INT64_MAX / 2 : a + static_cast<int64_t>(b);
}

}  // namespace

void add_model_spend(BudgetUsed& used, double prompt_tokens, double completion_tokens,
                     double cost_usd) {
  used.prompt_tokens = saturating_add(used.prompt_tokens, spend_term(prompt_tokens));
  used.completion_tokens = saturating_add(used.completion_tokens, spend_term(completion_tokens));
  used.cost_usd += spend_term(cost_usd);
}

void add_cache_tokens(BudgetUsed& used, double cache_read_tokens, double cache_write_tokens) {
  used.cache_read_tokens = saturating_add(used.cache_read_tokens, spend_term(cache_read_tokens));
  used.cache_write_tokens = saturating_add(used.cache_write_tokens, spend_term(cache_write_tokens));
}

}  // namespace marathon
