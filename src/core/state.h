// State: everything the runner knows about a run, rebuilt only from the log by fold().
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/compaction_log.h"
#include "core/confirmation.h"
#include "core/events.h"
#include "core/token_fit.h"
#include "core/turn_tracker.h"

namespace marathon {

struct BudgetLimits {
  int64_t max_tool_calls = 1000;
  double max_wall_s = 24 * 3600.0;
  int64_t max_tokens = 0;   // 0: no limit
  double max_cost_usd = 0;  // 0: no limit
  double max_gpu_s = 0;     // 0: no limit

  bool operator==(const BudgetLimits&) const = default;
};

struct BudgetUsed {
  int64_t tool_calls = 0;
  int64_t model_calls = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  // Of prompt_tokens, those the provider read from or wrote to its prompt cache (model.response
  // usage.cache_read_tokens / cache_write_tokens).
  int64_t cache_read_tokens = 0;
  int64_t cache_write_tokens = 0;
  double cost_usd = 0;
  double wall_s = 0;  // active time: sum over run segments (created/resumed -> last event)
  double gpu_s = 0;

  bool operator==(const BudgetUsed&) const = default;
};

// Adds one model response's tokens and cost to `used`. Spend only grows: a value that is negative,
// not finite or absent (pass 0) adds nothing, and each is capped at kMaxSpendPerResponse so that no
// sum can overflow. fold and the runner's look-ahead both count through this.
inline constexpr double kMaxSpendPerResponse = 1e12;
void add_model_spend(BudgetUsed& used, double prompt_tokens, double completion_tokens,
                     double cost_usd);
// Adds one response's prompt-cache counts (the same rules: only non-negative finite amounts).
void add_cache_tokens(BudgetUsed& used, double cache_read_tokens, double cache_write_tokens);

struct GoalState {
  std::string objective;
  std::string metric;  // e.g. "speedup"
  Direction direction = Direction::kMax;
  std::optional<double> target;
  GoalStatus status = GoalStatus::kActive;
  std::string progress;  // free text, set by goal verbs
  int turns_without_progress = 0;

  bool operator==(const GoalState&) const = default;
};

struct LedgerEntry {
  int64_t seq = 0;  // the event that recorded it
  LedgerKind kind = LedgerKind::kAttempt;
  std::string text;       // the strategy in the model's words, or the note
  std::string candidate;  // candidate hash (attempts)
  std::optional<bool> correct;
  std::optional<double> score;
  std::string failure;            // why it failed, if it did
  json figures = json::object();  // key profiler figures, speed-ups

  bool operator==(const LedgerEntry&) const = default;
};

struct InFlightTool {
  std::string call_id;
  std::string name;
  json arguments;
  int64_t started_seq = 0;

  bool operator==(const InFlightTool&) const = default;
};

// One entry of State::eval_cache, stored as JSON {candidate, status, result, seq} (checkpoints keep
// it in that form): what an eval.finished with a cache_key recorded.
struct EvalCacheEntry {
  std::string candidate;
  EvalStatus status = EvalStatus::kOk;
  json result = json::object();
  int64_t seq = 0;
};
json to_json(const EvalCacheEntry& e);
// nullopt for an entry that is not of that form.
std::optional<EvalCacheEntry> read_eval_cache_entry(const json& j);

struct State {
  int64_t last_seq = 0;
  bool created = false;
  std::string run_id;
  json task = json::object();    // the task spec as recorded in run.created
  json config = json::object();  // run config as recorded in run.created (+ later changes)
  GoalState goal;
  BudgetLimits limits;
  BudgetUsed used;

  int64_t evaluations = 0;           // eval.finished events (cached or not)
  int64_t evaluations_executed = 0;  // of those, actually executed (not served from cache)
  int64_t evals_since_improvement = 0;
  // The run's best: with confirmation on (config.confirm, core/confirmation.h) the median of the
  // best candidate's re-measurements, announced once they are in; else the best first draw.
  std::optional<double> best_score;
  std::string best_candidate;              // candidate hash
  std::optional<double> baseline_score;    // first correct evaluation's baseline, if reported
  std::map<std::string, json> eval_cache;  // cache key -> result (what resume consults)
  Confirmations confirm;                   // first draws, re-measurements, what is owed

  std::vector<LedgerEntry> ledger;
  std::map<std::string, std::string> workspace;  // path -> blob sha256 (current file versions)
  std::map<std::string, std::map<std::string, std::string>>
      candidates;                                 // hash -> workspace snapshot
  std::map<std::string, InFlightTool> in_flight;  // call_id -> started, not finished
  // Finished tool calls per tool. The names are the registry's: a call to an unknown tool is
  // refused before it is logged, so this stays as small as the tool set.
  std::map<std::string, int64_t> tool_calls_by_name;
  // The loop's own projections of the log, folded here with the rest so that one pass (and one
  // checkpoint) gives them all: compaction (the installed summary, elisions, cuts, an interrupted
  // compaction), the token-estimate calibration, the conversation's turn state.
  CompactionLog compaction;
  TokenRatioFit token_fit;
  TurnTracker turn;
  // The reason of a run.stop_requested not yet followed by a run.resumed (the runner stops at its
  // next step).
  std::optional<std::string> stop_requested;

  bool paused = false;
  bool done = false;
  std::string finish_reason;
  std::vector<std::string> budget_warnings;  // which budgets have been warned about
  // Runner sessions started with --unsafe-no-sandbox: the seq of each sandbox.disabled event, and
  // the reason the last one gave (the probe's finding, or that the user asked).
  std::vector<int64_t> sandbox_disabled;
  std::string sandbox_disabled_reason;
  int64_t turns = 0;  // model.request count

  // Bookkeeping of fold itself (not shown by status): wall-time segments and goal turns.
  bool segment_open = false;     // a run segment (created/resumed .. paused/finished) is active
  int64_t segment_start_us = 0;  // recorded_at of the event that opened it
  int64_t last_event_us = 0;     // latest recorded_at of the current segment
  double wall_closed_s = 0;      // wall seconds of closed segments
  int64_t last_goal_turn = 0;    // `turn` of the last model.request
  std::string forked_from;       // run id this run was forked from (run.forked)
  int64_t forked_at_seq = 0;
  std::string replay_of;  // run id of the run this one replays (run.created replay_of), else ""

  bool operator==(const State&) const = default;
};

// What the run spent itself. A replay (State::replay_of) is served the original's logged responses
// and tool results and never calls a model: its `used` counts the original's model calls, tokens,
// cost and logged GPU time again, so that the replay's budgets stop it where the original stopped,
// but it spent none of them (its tool calls and wall time are its own). Every view of a run's spend
// reads it from here.
BudgetUsed own_spend(const State& s);
// own_spend as JSON: {model_calls, tokens, cost_usd, gpu_s} (status --json, the dashboard).
json own_spend_json(const State& s);

// "" for a run that is not a replay; else one line saying that the budget figures are the
// original's spend and what the replay spent itself, e.g. "replayed from run-1: the original spent
// $0.42, 12000 tokens in 9 model calls, 0 s GPU; this replay: $0, 0 tokens, 0 model calls".
std::string replay_spend_note(const State& s);

// The installed compaction summary's text, or null when none is installed.
json installed_summary(const State& s);

// JSON view of the state (used by `marathon status --json`; includes the fields that contract
// names: events, tool_calls, model_calls, evaluations, best_score, best_candidate, done, budget).
json to_json(const State& s);

}  // namespace marathon
