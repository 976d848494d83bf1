#include "serve/run_view.h"

#include "core/fold.h"
#include "core/load_state.h"
#include "core/run_dir.h"

namespace marathon::serve {

std::string profile_summary(const std::string& output) {
  constexpr size_t kMaxLines = 40, kMaxBytes = 2400;  // the whole side-by-side table
  size_t end = 0;
  for (size_t lines = 0; end < output.size() && lines < kMaxLines; ++lines) {
    size_t nl = output.find('\n', end);
    end = nl == std::string::npos ? output.size() : nl + 1;
  }
  end = std::min(end, kMaxBytes);
  while (end < output.size() && end > 0 &&
         (static_cast<unsigned char>(output[end]) & 0xC0) == 0x80) {
    --end;
  }
  return end < output.size() ? output.substr(0, end) + "..." : output;
}

RunView::RunView(const std::filesystem::path& run_dir, Fold fold) : dir_(run_dir) {
  RunDir dir = existing_run_dir(run_dir);
  store_ = EventStore::open(dir.events_db().string(), EventStore::Mode::kReadOnly);
  if (fold == Fold::kSeries) {
    ensure_series();
    return;
  }
  state_ = load_state(*store_);
  if (state_.last_seq > 0) {
    for (const Event& e : store_->read(state_.last_seq, state_.last_seq)) {
      last_event_us_ = e.recorded_at_us;
      last_event_type_ = e.type;
    }
  }
}

void RunView::ensure_series() {
  if (series_) return;
  evaluations_.clear();
  markers_.clear();
  goal_history_.clear();
  starter_.clear();
  starter_done_ = false;
  best_before_.clear();
  latest_eval_of_key_.clear();
  unmatched_profile_.clear();
  text_cache_ = {};
  usage_ = {};
  LoadOptions o;
  o.use_checkpoints = false;
  o.observe = [this](const Event& e, const State& s) { observe(e, s, /*full=*/false); };
  state_ = load_state(*store_, INT64_MAX, o);
  starter_done_ = true;
  // Outputs the fold's projection left out: read those of the profiles shown.
  for (Evaluation& ev : evaluations_) {
    if (ev.profile_seq == 0) continue;
    for (const Event& e : store_->read(ev.profile_seq, ev.profile_seq)) {
      if (auto t = tool_fields(e)) ev.profile = profile_summary(t->output);
      ev.json_text.clear();
    }
  }
  series_ = true;
}

void RunView::refresh() {
  int64_t last = store_->last_seq();
  if (last <= state_.last_seq) return;
  try {
    store_->for_each(state_.last_seq + 1, [&](const Event& e) {
      apply(state_, e);
      if (series_) observe(e, state_, /*full=*/true);
      last_event_us_ = e.recorded_at_us;
      last_event_type_ = e.type;
      return true;
    });
  } catch (const std::invalid_argument& e) {
    throw StoreError("event log " + store_->path() + ": cannot fold: " + e.what());
  }
}

json RunView::status_json() {
  struct Lend {  // the ledger is moved out for the call and back whatever happens
    std::vector<LedgerEntry>& ledger;
    std::vector<LedgerEntry> held;
    ~Lend() { ledger = std::move(held); }
  } lend{state_.ledger, std::move(state_.ledger)};
  state_.ledger.clear();
  json j = to_json(state_);
  j.erase("ledger");
  return j;
}

void RunView::attach_profile(Evaluation& eval, int64_t seq, const std::string* output) {
  eval.json_text.clear();
  eval.profile_seq = seq;
  eval.updated_seq = std::max(eval.updated_seq, seq);
  if (output) {
    eval.profile = profile_summary(*output);
  } else if (series_) {  // a profile met before its evaluation: its output is in the log
    for (const Event& e : store_->read(seq, seq)) {
      if (auto t = tool_fields(e)) eval.profile = profile_summary(t->output);
    }
  }
}

void RunView::observe(const Event& e, const State& s, bool full) {
  if (s.created && created_us_ == 0) created_us_ = e.recorded_at_us;
  last_event_us_ = e.recorded_at_us;
  last_event_type_ = e.type;
  if (!starter_done_) {  // the workspace after the last creation event
    if (is_creation_event(e)) {
      starter_ = s.workspace;
    } else {
      starter_done_ = true;
    }
  }
  usage_.add(e);
  if (auto f = eval_fields(e)) {
    Evaluation ev;
    ev.seq = e.seq;
    ev.at_us = e.recorded_at_us;
    ev.tool_calls = s.used.tool_calls;
    ev.wall_s = s.used.wall_s;
    ev.fields = std::move(*f);
    ev.best_after = s.best_score;
    ev.previous_best = best_before_;
    if (!s.ledger.empty() && s.ledger.back().seq == e.seq) {
      ev.failure = s.ledger.back().failure;
      ev.figures = s.ledger.back().figures;
    }
    ev.workspace_key = candidate_hash(s.workspace);
    ev.updated_seq = e.seq;
    evaluations_.push_back(std::move(ev));
    Evaluation& added = evaluations_.back();
    latest_eval_of_key_[added.workspace_key] = evaluations_.size() - 1;
    if (auto it = unmatched_profile_.find(added.workspace_key); it != unmatched_profile_.end()) {
      attach_profile(added, it->second, nullptr);
      unmatched_profile_.erase(it);
    }
  } else if (e.type == events::ToolFinished::kType) {
    auto t = tool_fields(e);
    if (t && t->name == kProfileTool) {
      std::string key = candidate_hash(s.workspace);
      if (auto it = latest_eval_of_key_.find(key); it != latest_eval_of_key_.end()) {
        attach_profile(evaluations_[it->second], e.seq, full ? &t->output : nullptr);
      } else {
        unmatched_profile_[key] = e.seq;
      }
    }
  }
  // A re-measurement that moves the best (confirmation, core/confirmation.h): the latest
  // evaluation shows the best from then on.
  if (e.type == events::EvalRemeasured::kType && !evaluations_.empty() &&
      evaluations_.back().best_after != s.best_score) {
    Evaluation& last = evaluations_.back();
    last.best_after = s.best_score;
    last.updated_seq = std::max(last.updated_seq, e.seq);
    last.json_text.clear();
  }
  if (auto m = marker_fields(e)) {
    markers_.push_back({e.seq, e.recorded_at_us, s.used.tool_calls, s.used.wall_s, *m});
  }
  if (e.type == events::RunCreated::kType) {
    goal_history_.push_back(
        {e.seq, e.recorded_at_us,
         GoalFields{"created", s.goal.objective, to_string(s.goal.status), ""}});
  } else if (auto g = goal_fields(e)) {
    GoalFields after = *g;
    after.objective = s.goal.objective;  // what the fold made of it (clear empties it)
    after.status = to_string(s.goal.status);
    goal_history_.push_back({e.seq, e.recorded_at_us, after});
  }
  best_before_ = s.best_candidate;
}

}  // namespace marathon::serve
