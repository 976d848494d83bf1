#include "loop/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/fork.h"
#include "core/run_dir.h"
#include "core/turn_tracker.h"
#include "core/workspace_snapshot.h"
#include "loop/drive.h"

namespace marathon {

namespace fs = std::filesystem;

const std::set<std::string>& offline_irreproducible_tools() {
  static const std::set<std::string> kTools = {"evaluate", "profile", "run"};
  return kTools;
}

namespace {

using namespace events;

struct LoggedCall {
  std::string tool;
  std::optional<ToolFinished> finished;
  std::vector<Event> effects;
};

// (turn, index) -> the logged call, with the turn counted as the runner counts it: the number of
// model.response events before the call.
std::map<std::pair<int64_t, size_t>, LoggedCall> index_calls(const std::vector<Event>& events) {
  std::map<std::pair<int64_t, size_t>, LoggedCall> calls;
  std::map<std::string, std::pair<int64_t, size_t>> by_started_id;
  int64_t responses = 0;
  std::vector<LoggedToolCall> last_calls;
  for (const Event& e : events) {
    if (is<ModelResponse>(e)) {
      ++responses;
      last_calls = tool_calls_of(payload_of<ModelResponse>(e).message);
    } else if (is<ToolStarted>(e)) {
      auto started = payload_of<ToolStarted>(e);
      int64_t turn = started.turn.value_or(responses);
      size_t index = 0;
      if (started.index) {
        index = static_cast<size_t>(*started.index);
      } else {
        for (const LoggedToolCall& c : last_calls) {
          if (c.id == started.call_id) index = c.index;
        }
      }
      by_started_id[e.id] = {turn, index};
      calls[{turn, index}].tool = started.name;
    } else if (!e.causation.empty()) {
      auto it = by_started_id.find(e.causation);
      if (it == by_started_id.end()) continue;
      LoggedCall& c = calls[it->second];
      if (is<ToolFinished>(e)) {
        c.finished = payload_of<ToolFinished>(e);
      } else {
        c.effects.push_back(e);
      }
    }
  }
  return calls;
}

void copy_blobs(const Event& e, const EventStore& from, EventStore& to) {
  for (const std::string& sha : blob_refs(e)) {
    if (to.has_blob(sha)) continue;
    if (std::optional<std::string> bytes = from.get_blob(sha)) to.put_blob(*bytes);
  }
}

}  // namespace

LoggedResultFn logged_results(std::vector<Event> original, const EventStore& from, EventStore& to) {
  auto calls =
      std::make_shared<std::map<std::pair<int64_t, size_t>, LoggedCall>>(index_calls(original));
  return [calls, &from, &to](int64_t turn, size_t index,
                             const std::string& tool) -> std::optional<LoggedResult> {
    auto it = calls->find({turn, index});
    if (it != calls->end() && !it->second.finished && it->second.tool == tool &&
        offline_irreproducible_tools().count(tool)) {
      LoggedResult stopped;
      stopped.original_stopped = true;
      return stopped;
    }
    if (it == calls->end() || !it->second.finished) return std::nullopt;
    const LoggedCall& c = it->second;
    const ToolFinished& finished = *c.finished;
    if (!finished.interrupted && !offline_irreproducible_tools().count(tool)) return std::nullopt;
    if (c.tool != tool) return std::nullopt;  // the replay diverged; let the tool speak
    LoggedResult r;
    r.finished = finished;
    r.result.ok = finished.ok;
    r.result.output = finished.output;
    r.result.full_output_sha = finished.output_sha;
    r.result.gpu_s = finished.gpu_s.value_or(0.0);
    for (const Event& e : c.effects) {
      copy_blobs(e, from, to);
      if (is<RunFinished>(e)) {
        r.result.finishes_run = true;
        continue;  // the runner writes run.finished for a finishing tool
      }
      r.result.events.push_back({e.type, e.payload, "", e.stream, e.type_version, e.durability});
    }
    if (!r.result.full_output_sha.empty() && !to.has_blob(r.result.full_output_sha)) {
      if (auto bytes = from.get_blob(r.result.full_output_sha)) to.put_blob(*bytes);
    }
    return r;
  };
}

std::function<std::optional<EvalRemeasured>(const RemeasureDue&)> logged_remeasurements(
    const std::vector<Event>& original) {
  auto logged = std::make_shared<std::map<std::pair<std::string, int64_t>, EvalRemeasured>>();
  for (const Event& e : original) {
    if (!is<EvalRemeasured>(e)) continue;
    EvalRemeasured p = payload_of<EvalRemeasured>(e);
    logged->emplace(std::make_pair(p.candidate, p.index), std::move(p));
  }
  return [logged](const RemeasureDue& due) -> std::optional<EvalRemeasured> {
    auto it = logged->find({due.candidate, due.index});
    if (it == logged->end()) return std::nullopt;
    return it->second;
  };
}

std::unique_ptr<EventStore> create_replay_run(const fs::path& from_dir, const fs::path& to_dir,
                                              std::vector<Event>* original,
                                              std::unique_ptr<EventStore>* from_store) {
  RunDir from = existing_run_dir(from_dir);
  *from_store = EventStore::open(from.events_db().string(), EventStore::Mode::kReadOnly);
  *original = (*from_store)->read();
  if (original->empty() || !is<RunCreated>(original->front())) {
    throw StoreError(
        fmt::format("{}: the log does not start with run.created", (*from_store)->path()));
  }
  RunDir to = create_run_dir(to_dir);
  auto store = EventStore::open(to.events_db().string(), EventStore::Mode::kCreate);

  auto created = payload_of<RunCreated>(original->front());
  created.replay_of = ReplayOf{created.run_id, fs::absolute(from_dir).lexically_normal().string()};
  created.run_id = new_run_id();
  std::vector<NewEvent> batch{make_event(created)};
  WorkspaceFiles files;
  for (size_t i = 1; i < original->size(); ++i) {
    const Event& e = (*original)[i];
    if (!is<WorkspaceWritten>(e) ||
        payload_of<WorkspaceWritten>(e).source != WorkspaceWritten::kStarter) {
      break;
    }
    copy_blobs(e, **from_store, *store);
    batch.push_back({e.type, e.payload});
    apply_workspace_event(files, e);
  }
  store->append_batch(batch);
  materialize_workspace(*store, files, to.workspace(), /*remove_others=*/true);
  return store;
}

namespace {

bool is_step(const Event& e) { return is<ModelRequest>(e) || is<ToolFinished>(e); }

}  // namespace

std::vector<ExternalEvent> external_events(const std::vector<Event>& original) {
  std::vector<ExternalEvent> out;
  int64_t steps = 0;
  for (const Event& e : original) {
    if (is_step(e)) ++steps;
    // Also what the other branches of a run with branches wrote into this one (loop/branches.h):
    // their notes' copies and their best candidates.
    const bool external =
        is<CompactionRequested>(e) || is<RunStopRequested>(e) ||
        (is<GoalChanged>(e) && payload_of<GoalChanged>(e).verb != GoalVerb::kAutoPause) ||
        is<CandidateImported>(e) || (is<LedgerNoted>(e) && payload_of<LedgerNoted>(e).from_branch);
    if (external) out.push_back({steps, {e.type, e.payload}});
  }
  return out;
}

std::function<void()> replay_external_events(std::vector<ExternalEvent> external, EventStore& to) {
  struct Progress {
    std::vector<ExternalEvent> pending;
    size_t next = 0;
    int64_t seen_seq = 0;
    int64_t steps = 0;
  };
  auto p = std::make_shared<Progress>();
  p->pending = std::move(external);
  return [p, &to] {
    if (p->next >= p->pending.size()) return;
    for (const Event& e : to.read(p->seen_seq + 1)) {
      if (is_step(e)) ++p->steps;
      p->seen_seq = e.seq;
    }
    while (p->next < p->pending.size() && p->pending[p->next].after_steps <= p->steps) {
      const Event e = to.append(p->pending[p->next++].event);
      p->seen_seq = e.seq;
    }
  };
}

RunReport drive_replay(EventStore& store, const fs::path& to_dir,
                       const std::vector<Event>& original, const EventStore& from,
                       ReplayPolicy& policy, bool quiet, State* final_state) {
  // External events come at step boundaries and, when the original got them while a model call
  // was in flight, while the replay's call is "in flight" (the policy is asked).
  for (const Event& e : original) {
    if (is<CandidateImported>(e)) copy_blobs(e, from, store);  // before it is injected
  }
  std::function<void()> inject = replay_external_events(external_events(original), store);
  policy.set_on_ask(inject);
  DriveOptions options{quiet, logged_results(original, from, store)};
  options.between_steps = inject;
  options.logged_remeasure = logged_remeasurements(original);
  RunReport report = drive(store, to_dir, policy, options, final_state);
  // Pauses that were resumed (a resume after a kill, with no pause before it, is not one).
  const auto resumed_pauses = [](const std::vector<Event>& events) {
    int64_t n = 0;
    bool paused = false;
    for (const Event& e : events) {
      if (is<RunPaused>(e)) paused = true;
      if (is<RunResumed>(e) && paused) {
        ++n;
        paused = false;
      }
    }
    return n;
  };
  const int64_t original_resumes = resumed_pauses(original);
  while (report.outcome != RunOutcome::kFinished &&
         resumed_pauses(store.read()) < original_resumes) {
    RunResumed resumed;
    resumed.reason = "resume";
    store.append(make_event(resumed));
    report = drive(store, to_dir, policy, options, final_state);
  }
  return report;
}

json comparable_state(const State& s) {
  json ledger = json::array();
  for (const LedgerEntry& l : s.ledger) {
    ledger.push_back({{"kind", l.kind},
                      {"text", l.text},
                      {"candidate", l.candidate},
                      {"correct", l.correct ? json(*l.correct) : json(nullptr)},
                      {"score", l.score ? json(*l.score) : json(nullptr)},
                      {"failure", l.failure},
                      {"figures", l.figures}});
  }
  json cache = json::object();
  for (const auto& [key, v] : s.eval_cache) {
    json entry = v;
    if (entry.is_object()) entry.erase("seq");
    cache[key] = entry;
  }
  json in_flight = json::array();
  for (const auto& [id, f] : s.in_flight) in_flight.push_back({{"call_id", id}, {"name", f.name}});
  json confirmation = confirmation_json(s);
  json samples = json::object();
  for (const auto& [cand, m] : s.confirm.candidates) {
    samples[cand] = {{"first", m.first},   {"samples", m.samples}, {"remeasured", m.remeasured},
                     {"failed", m.failed}, {"closed", m.closed},   {"lost", m.lost}};
  }
  confirmation["candidates"] = std::move(samples);
  const BudgetUsed& u = s.used;
  return {{"task", s.task},
          {"goal",
           {{"objective", s.goal.objective},
            {"metric", s.goal.metric},
            {"direction", to_string(s.goal.direction)},
            {"target", s.goal.target ? json(*s.goal.target) : json(nullptr)},
            {"status", to_string(s.goal.status)},
            {"progress", s.goal.progress},
            {"turns_without_progress", s.goal.turns_without_progress}}},
          {"used",
           {{"tool_calls", u.tool_calls},
            {"model_calls", u.model_calls},
            {"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"cost_usd", u.cost_usd},
            {"gpu_s", u.gpu_s}}},
          {"turns", s.turns},
          {"evaluations", s.evaluations},
          {"evaluations_executed", s.evaluations_executed},
          {"evals_since_improvement", s.evals_since_improvement},
          {"best_score", s.best_score ? json(*s.best_score) : json(nullptr)},
          {"best_candidate", s.best_candidate},
          {"baseline_score", s.baseline_score ? json(*s.baseline_score) : json(nullptr)},
          {"confirmation", confirmation},
          {"eval_cache", cache},
          {"ledger", ledger},
          {"workspace", s.workspace},
          {"candidates", s.candidates},
          {"in_flight", in_flight},
          {"compactions", s.compaction.compactions},
          {"summary", installed_summary(s)},
          {"budget_warnings", s.budget_warnings},
          {"done", s.done},
          {"finish_reason", s.finish_reason}};
}

}  // namespace marathon
