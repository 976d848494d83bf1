#include "serve/run_json.h"

#include <algorithm>

#include "core/log_export.h"
#include "core/utf8.h"
#include "serve/line_diff.h"

namespace marathon::serve {

namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// used / limit of one budget (limit null when there is none).
json gauge(double used, double limit) {
  return {{"used", used}, {"limit", limit > 0 ? json(limit) : json(nullptr)}};
}

json budget_json(const State& s) {
  const BudgetUsed& u = s.used;
  const BudgetLimits& l = s.limits;
  // The gauges show what the budgets count; a replay counts the original's spend there again, so
  // `replayed` and `spent_by_this_run` say what the run spent itself.
  return {{"replayed", !s.replay_of.empty()},
          {"replay_note", replay_spend_note(s)},
          {"spent_by_this_run", own_spend_json(s)},
          {"tool_calls", gauge(double(u.tool_calls), double(l.max_tool_calls))},
          {"wall_s", gauge(u.wall_s, l.max_wall_s)},
          {"tokens", gauge(double(u.prompt_tokens + u.completion_tokens), double(l.max_tokens))},
          {"cost_usd", gauge(u.cost_usd, l.max_cost_usd)},
          {"gpu_s", gauge(u.gpu_s, l.max_gpu_s)},
          {"prompt_cache",
           {{"prompt_tokens", u.prompt_tokens},
            {"read_tokens", u.cache_read_tokens},
            {"write_tokens", u.cache_write_tokens}}}};
}

json goal_json(const State& s) {
  const GoalState& g = s.goal;
  return {{"objective", g.objective}, {"metric", g.metric}, {"direction", g.direction},
          {"target", opt(g.target)},  {"status", g.status}, {"progress", g.progress}};
}

json marker_json(const Marker& m) {
  return {{"seq", m.seq},
          {"at_us", m.at_us},
          {"tool_calls", m.tool_calls},
          {"wall_s", m.wall_s},
          {"kind", to_string(m.fields.kind)},
          {"label", m.fields.label}};
}

json goal_entry_json(const GoalEntry& g) {
  return {{"seq", g.seq},
          {"at_us", g.at_us},
          {"verb", g.fields.verb},
          {"objective", g.fields.objective},
          {"status", g.fields.status},
          {"progress", g.fields.progress}};
}

// Where evaluations ran and how busy each slot or worker was (of the run's active time), and which
// branch of how many this run is (docs/scale-out.md).
json executor_json(const RunView& v) {
  const State& s = v.state();
  return {{"usage", eval::usage_json(v.usage().slots(), s.used.wall_s)},
          {"branch", s.config.value("branch", 0)},
          {"branches", s.config.value("branches", 1)}};
}

json event_line(const Event& e) {
  return {{"seq", e.seq},
          {"at", format_rfc3339_us(e.recorded_at_us)},
          {"type", e.type},
          {"text", payload_preview(e, 240)}};
}

std::string task_name(const State& s) {
  auto it = s.task.find("name");
  return it != s.task.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

json run_row(const std::string& id, const RunView& v, RunPhase phase, int64_t now_us) {
  const State& s = v.state();
  return {{"id", id},
          {"run_id", s.run_id},
          {"task", task_name(s)},
          {"phase", to_string(phase)},
          {"finish_reason", s.finish_reason},
          {"best_score", opt(s.best_score)},
          {"best_candidate", s.best_candidate},
          {"baseline_score", opt(s.baseline_score)},
          // The best's re-measurements and spread, ties, the verdict on the baseline.
          {"confirmation", confirmation_json(s)},
          {"goal", goal_json(s)},
          {"evaluations", s.evaluations},
          {"events", s.last_seq},
          {"budget", budget_json(s)},
          {"last_event",
           {{"type", v.last_event_type()},
            {"at_us", v.last_event_us()},
            {"age_s", v.last_event_us() > 0
                          ? std::max<double>(0, double(now_us - v.last_event_us()) / 1e6)
                          : 0}}}};
}

json evaluation_json(const Evaluation& e) {
  const EvalFields& f = e.fields;
  return {{"seq", e.seq},
          {"at_us", e.at_us},
          {"tool_calls", e.tool_calls},
          {"wall_s", e.wall_s},
          {"kind", to_string(f.kind)},
          {"status", f.status},
          {"correct", f.correct},
          {"violating", f.violating},
          {"score", opt(f.score)},
          {"cached", f.cached},
          {"candidate", f.candidate},
          {"strategy", f.strategy},
          {"failure", e.failure},
          {"figures", e.figures},
          {"best_after", opt(e.best_after)},
          {"previous_best", e.previous_best},
          {"profile", e.profile},
          {"updated_seq", e.updated_seq}};
}

const std::string& evaluation_text(const Evaluation& e) {
  if (e.json_text.empty()) e.json_text = dump(evaluation_json(e));
  return e.json_text;
}

namespace {

json note_json(const LedgerEntry& l) {
  return {{"seq", l.seq}, {"kind", l.kind}, {"text", l.text}};
}

// The notes of the ledger as a JSON array's text, extended with the entries added since last time.
std::string notes_text(const RunView& v) {
  RunView::TextCache& c = v.text_cache();
  const std::vector<LedgerEntry>& ledger = v.state().ledger;
  for (; c.ledger_seen < ledger.size(); ++c.ledger_seen) {
    const LedgerEntry& l = ledger[c.ledger_seen];
    if (l.kind == LedgerKind::kAttempt) continue;
    if (!c.notes.empty()) c.notes += ',';
    c.notes += dump(note_json(l));
  }
  return "[" + c.notes + "]";
}

}  // namespace

std::string run_detail(const std::string& id, RunView& v, RunPhase phase, int64_t now_us) {
  const State& s = v.state();
  json markers = json::array();
  for (const Marker& m : v.markers()) markers.push_back(marker_json(m));
  json goals = json::array();
  for (const GoalEntry& g : v.goal_history()) goals.push_back(goal_entry_json(g));
  json starter = json::array();
  for (const auto& [path, sha] : v.starter()) starter.push_back(path);
  std::string evaluations = "[";
  for (const Evaluation& e : v.evaluations()) {
    if (evaluations.size() > 1) evaluations += ',';
    evaluations += evaluation_text(e);
  }
  evaluations += ']';
  json rest = {{"row", run_row(id, v, phase, now_us)},
               {"state", v.status_json()},
               {"budget", budget_json(s)},
               {"executor", executor_json(v)},
               {"summary", installed_summary(s)},
               {"created_us", v.created_us()},
               {"markers", std::move(markers)},
               {"goal_history", std::move(goals)},
               {"starter_files", std::move(starter)},
               {"last_seq", s.last_seq}};
  std::string out = dump(rest);  // "{...}": the evaluations go in before its closing brace
  out.pop_back();
  out += ",\"notes\":" + notes_text(v) + ",\"evaluations\":" + evaluations + "}";
  return out;
}

json run_update(const std::string& id, const RunView& v, RunPhase phase, int64_t after_seq,
                int64_t now_us) {
  const State& s = v.state();
  json evaluations = json::array();
  for (const Evaluation& e : v.evaluations()) {
    if (e.updated_seq > after_seq) evaluations.push_back(evaluation_json(e));
  }
  json markers = json::array();
  for (const Marker& m : v.markers()) {
    if (m.seq > after_seq) markers.push_back(marker_json(m));
  }
  json goals = json::array();
  for (const GoalEntry& g : v.goal_history()) {
    if (g.seq > after_seq) goals.push_back(goal_entry_json(g));
  }
  json notes = json::array();
  for (auto it = s.ledger.rbegin(); it != s.ledger.rend() && it->seq > after_seq; ++it) {
    if (it->kind != LedgerKind::kAttempt) notes.push_back(note_json(*it));
  }
  std::reverse(notes.begin(), notes.end());
  return {{"row", run_row(id, v, phase, now_us)},
          {"budget", budget_json(s)},
          {"executor", executor_json(v)},
          {"goal", goal_json(s)},
          {"summary", installed_summary(s)},
          {"evaluations", std::move(evaluations)},
          {"markers", std::move(markers)},
          {"goal_history", std::move(goals)},
          {"notes", std::move(notes)},
          {"events", event_lines(v.store(), after_seq, 200)},
          {"last_seq", s.last_seq}};
}

json event_lines(const EventStore& store, int64_t after, size_t limit,
                 const std::vector<std::string>& types) {
  auto wanted = [&](const Event& e) {
    return types.empty() || std::find(types.begin(), types.end(), e.type) != types.end();
  };
  // The newest `limit` after `after`: windows read backwards from the end until enough are found
  // (a page that fell behind skips the middle).
  std::vector<json> newest;  // newest first
  constexpr int64_t kWindow = 2000;
  int64_t floor = std::max<int64_t>(1, after + 1);
  for (int64_t to = store.last_seq(); to >= floor && newest.size() < limit; to -= kWindow) {
    int64_t from = std::max<int64_t>(floor, to - kWindow + 1);
    if (types.empty()) from = std::max<int64_t>(from, to - static_cast<int64_t>(limit) + 1);
    std::vector<Event> window = store.read(from, to);
    for (auto it = window.rbegin(); it != window.rend() && newest.size() < limit; ++it) {
      if (wanted(*it)) newest.push_back(event_line(*it));
    }
  }
  json out = json::array();
  for (auto it = newest.rbegin(); it != newest.rend(); ++it) out.push_back(std::move(*it));
  return out;
}

std::string shown_text(const std::string& bytes) {
  if (bytes.size() > kMaxShownFileBytes) {
    return "(not shown: " + std::to_string(bytes.size()) + " bytes, more than the page shows)\n";
  }
  if (bytes.find('\0') != std::string::npos || !is_valid_utf8(bytes)) {
    return "(not shown: binary, " + std::to_string(bytes.size()) + " bytes)\n";
  }
  return bytes;
}

namespace {

std::string file_text(const EventStore& store, const WorkspaceFiles& files,
                      const std::string& path) {
  auto it = files.find(path);
  if (it == files.end()) return "";
  std::optional<std::string> bytes = store.get_blob(it->second);
  return bytes ? shown_text(*bytes) : "(not shown: blob " + it->second + " is missing)\n";
}

// Unified diffs of every file in either snapshot, concatenated in path order.
std::string snapshot_diff(const EventStore& store, const WorkspaceFiles& from,
                          const WorkspaceFiles& to, const std::string& from_name,
                          const std::string& to_name) {
  std::vector<std::string> paths;
  for (const auto& [p, sha] : from) paths.push_back(p);
  for (const auto& [p, sha] : to) {
    if (!from.count(p)) paths.push_back(p);
  }
  std::sort(paths.begin(), paths.end());
  std::string out;
  for (const std::string& p : paths) {
    auto a = from.find(p), b = to.find(p);
    if (a != from.end() && b != to.end() && a->second == b->second) continue;
    out += unified_diff(file_text(store, from, p), file_text(store, to, p),
                        a == from.end() ? "/dev/null" : from_name + "/" + p,
                        b == to.end() ? "/dev/null" : to_name + "/" + p);
  }
  return out;
}

}  // namespace

std::optional<json> candidate_json(const RunView& v, const std::string& hash) {
  const State& s = v.state();
  auto it = s.candidates.find(hash);
  if (it == s.candidates.end()) return std::nullopt;
  const WorkspaceFiles& files = it->second;
  std::string previous_best;
  int64_t first_seq = 0;
  for (const Evaluation& e : v.evaluations()) {
    if (e.fields.candidate == hash) {
      previous_best = e.previous_best;
      first_seq = e.seq;
      break;
    }
  }
  json out = {{"candidate", hash}, {"first_evaluated_seq", first_seq}};
  json shown = json::object();
  for (const auto& [path, sha] : files) shown[path] = file_text(v.store(), files, path);
  out["files"] = std::move(shown);
  out["diff_vs_starter"] =
      snapshot_diff(v.store(), v.starter(), files, "starter", "candidate-" + hash.substr(0, 12));
  out["previous_best"] = previous_best;
  if (!previous_best.empty() && previous_best != hash && s.candidates.count(previous_best)) {
    out["diff_vs_previous_best"] =
        snapshot_diff(v.store(), s.candidates.at(previous_best), files,
                      "best-" + previous_best.substr(0, 12), "candidate-" + hash.substr(0, 12));
  } else {
    out["diff_vs_previous_best"] = nullptr;
  }
  return out;
}

}  // namespace marathon::serve
