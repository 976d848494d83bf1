// RunView: what the dashboard shows of one run, read from its log through the one fold and kept up
// to date as the log grows. Opening it folds from the newest checkpoint (the state only, enough for
// the Runs page); the first call that needs the series (the charts, the attempts, the goal history)
// folds every event once (core/load_state.h, with an observer), and every refresh() after that
// folds only the events appended since. The log is opened read-only and never written. Not
// thread-safe: RunViews (run_views.h) serialises the callers of one view.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/event_store.h"
#include "core/state.h"
#include "core/workspace_snapshot.h"
#include "eval/executor_usage.h"
#include "serve/event_fields.h"

namespace marathon::serve {

// One evaluation: a point of the charts and a row of the attempts table.
struct Evaluation {
  int64_t seq = 0;
  int64_t at_us = 0;       // recorded_at
  int64_t tool_calls = 0;  // tool calls finished when it was logged
  double wall_s = 0;       // the run's active wall time then (fold's wall clock)
  EvalFields fields;
  std::optional<double> best_after;  // the run's best score once it is counted
  std::string previous_best;         // the best candidate before it ("": none yet)
  std::string failure;               // fold's ledger: why it did not count ("" if it did)
  json figures = json::object();     // fold's ledger: metrics and figures
  std::string workspace_key;         // candidate_hash of the whole workspace then (profiles)
  int64_t profile_seq = 0;           // the latest profile (tool.finished) of this workspace
  std::string profile;               // the head of its output
  int64_t updated_seq = 0;           // the last event that changed this entry
  // Its JSON (run_json.h's evaluation_text), kept between requests; cleared whenever the entry
  // changes.
  mutable std::string json_text;
};

struct Marker {
  int64_t seq = 0;
  int64_t at_us = 0;
  int64_t tool_calls = 0;
  double wall_s = 0;
  MarkerFields fields;
};

struct GoalEntry {  // the goal as created, then each goal.changed
  int64_t seq = 0;
  int64_t at_us = 0;
  GoalFields fields;
};

class RunView {
 public:
  // Opens the log of `run_dir` read-only and folds it: from its newest checkpoint (kState), or
  // every event with the series (kSeries: the checkpoint would be folded again). Throws StoreError.
  enum class Fold { kState, kSeries };
  explicit RunView(const std::filesystem::path& run_dir, Fold fold = Fold::kState);

  // Folds the events appended since the last call. Throws StoreError (a damaged log).
  void refresh();
  // Builds the series (once) by folding every event. Throws StoreError.
  void ensure_series();
  bool has_series() const { return series_; }

  const State& state() const { return state_; }
  // `marathon status --json` of the state (to_json(State)) without the ledger, which for a long
  // run is most of it and which the dashboard shows otherwise (evaluations, notes).
  json status_json();
  const EventStore& store() const { return *store_; }
  const std::filesystem::path& dir() const { return dir_; }
  int64_t created_us() const { return created_us_; }  // with the series: run.created's time
  int64_t last_event_us() const { return last_event_us_; }
  const std::string& last_event_type() const { return last_event_type_; }

  // With the series only.
  const std::vector<Evaluation>& evaluations() const { return evaluations_; }
  const std::vector<Marker>& markers() const { return markers_; }
  const std::vector<GoalEntry>& goal_history() const { return goal_history_; }
  const WorkspaceFiles& starter() const { return starter_; }
  // Busy time per executor slot or worker (eval/executor_usage.h).
  const eval::UsageTally& usage() const { return usage_; }

  // JSON texts run_json.cc keeps between requests: the ledger's notes so far (comma-separated
  // objects) and how many ledger entries they cover (the ledger only grows).
  struct TextCache {
    std::string notes;
    size_t ledger_seen = 0;
  };
  TextCache& text_cache() const { return text_cache_; }

 private:
  // Records what `e` adds to the series; `s` includes `e`. `full` says whether the payload has
  // the fields the fold's projection leaves out (a tool's output).
  void observe(const Event& e, const State& s, bool full);
  void attach_profile(Evaluation& eval, int64_t seq, const std::string* output);

  std::filesystem::path dir_;
  std::unique_ptr<EventStore> store_;
  State state_;
  bool series_ = false;
  int64_t created_us_ = 0;
  int64_t last_event_us_ = 0;
  std::string last_event_type_;

  std::vector<Evaluation> evaluations_;
  std::vector<Marker> markers_;
  std::vector<GoalEntry> goal_history_;
  WorkspaceFiles starter_;
  bool starter_done_ = false;
  std::string best_before_;                           // best candidate before the current event
  std::map<std::string, size_t> latest_eval_of_key_;  // workspace key -> evaluations_ index
  std::map<std::string, int64_t> unmatched_profile_;  // workspace key -> latest profile seq
  mutable TextCache text_cache_;
  eval::UsageTally usage_;
};

// The head of a profiler output shown in the attempts table: its first lines, at most ~2.4 KB
// (the whole of the side-by-side view the `profile` tool gives).
std::string profile_summary(const std::string& output);

}  // namespace marathon::serve
