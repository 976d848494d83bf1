#include "mcp/harness_run.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <random>

#include "context/ledger_view.h"
#include "core/confined_path.h"
#include "core/fold.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "goal/budget.h"
#include "loop/run_setup.h"
#include "loop/tool_call_log.h"
#include "tools/remeasure.h"
#include "tools/tool_evaluate.h"
#include "tools/tool_note.h"
#include "tools/tool_profile.h"
#include "tools/tool_revert.h"
#include "tools/tool_write_file.h"

namespace marathon::mcp {

namespace fs = std::filesystem;

namespace {

// config.policy of a run an MCP client drives (no runner policy: `marathon resume` refuses it).
constexpr const char* kPolicy = "mcp";
// run.paused reason when the client ends the session.
constexpr const char* kSessionEnded = "session_ended";

fs::path default_run_dir(const std::string& task_name) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  return fmt::format("runs/{}-mcp-{}", task_name, buf);
}

std::string new_call_id() {
  std::random_device rd;
  return fmt::format("mcp-{:08x}{:08x}", rd(), rd());
}

std::string num(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "none"; }

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

HarnessRun::HarnessRun(const HarnessOptions& o) {
  try {
    task_ = load_task(o.task_dir);
  } catch (const TaskError& e) {
    throw HarnessError(e.what());
  }
  run_dir_ = o.run_dir.empty() ? default_run_dir(task_.name) : o.run_dir;
  std::string task_dir = fs::absolute(task_.dir).lexically_normal().string();
  try {
    if (fs::exists(RunDir{run_dir_}.events_db())) {
      lock_.emplace(RunLock::acquire(run_dir_));
      json moved = json::object();
      // Checked before anything is appended or the workspace rewritten.
      {
        auto reader =
            EventStore::open(RunDir{run_dir_}.events_db().string(), EventStore::Mode::kReadOnly);
        State s = load_state(*reader);
        if (!s.created) {
          throw HarnessError(fmt::format("{}: the log holds no run", run_dir_.string()));
        }
        // The same task in another folder (the run folder moved to another machine) carries on
        // there; another task is refused.
        try {
          if (std::optional<std::string> here = task_dir_here(s, task_dir)) {
            moved["task_dir"] = *here;
          }
        } catch (const std::invalid_argument& e) {
          throw HarnessError(fmt::format("{} is a run of the task in {}: {}", run_dir_.string(),
                                         s.config.value("task_dir", "?"), e.what()));
        }
        if (s.done) {
          throw HarnessError(
              fmt::format("{}: the run has finished ({}); give a new --run-dir (or fork this one)",
                          run_dir_.string(), s.finish_reason));
        }
      }
      store_ = reopen_run(run_dir_, &state_, moved);
    } else {
      lock_.emplace(RunLock::acquire_new(run_dir_));
      NewRunOptions n;
      n.run_dir = run_dir_;
      n.policy = kPolicy;
      try {
        store_ = create_run(task_, n);
      } catch (...) {
        lock_->abandon_new();
        throw;
      }
    }
  } catch (const StoreError& e) {
    throw HarnessError(e.what());
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const HarnessError*>(&e)) throw;
    throw HarnessError(e.what());
  }
  store_->set_write_guard([this] { lock_->verify(); });
  if (!o.sandbox_disabled.empty()) {
    store_->append(make_event(events::SandboxDisabled{o.sandbox_disabled, "mcp"}));
  }
  state_ = load_state(*store_);
  finish_interrupted_calls();

  tools_.add(make_write_file_tool());
  tools_.add(make_evaluate_tool());
  tools_.add(make_profile_tool());
  tools_.add(make_note_tool());
  tools_.add(make_revert_tool());

  // The starter files: the workspace.written{starter} events of run.created's batch.
  store_->for_each(1, [&](const Event& e) {
    if (e.seq == 1) return true;
    if (!is<events::WorkspaceWritten>(e)) return false;
    auto p = payload_of<events::WorkspaceWritten>(e);
    bool starter = p.source == events::WorkspaceWritten::kStarter && !p.deleted;
    if (starter) starter_[p.path] = p.sha;
    return starter;
  });
}

HarnessRun::~HarnessRun() {
  try {
    sync();
    if (!state_.done && !state_.paused) {
      store_->append(make_event(events::RunPaused{
          kSessionEnded,
          "the MCP session ended; `marathon mcp --task TASK --run-dir RUN` carries on"}));
    }
  } catch (const std::exception&) {
    // The log stays as it was: a session that ends without run.paused reads as a killed one.
  }
}

void HarnessRun::sync() {
  if (store_->last_seq() <= state_.last_seq) return;
  for (const Event& e : store_->read(state_.last_seq + 1)) apply(state_, e);
}

void HarnessRun::finish_interrupted_calls() {
  std::vector<InFlightTool> calls;
  for (const auto& [id, t] : state_.in_flight) calls.push_back(t);
  for (const InFlightTool& t : calls) {
    std::vector<Event> started = store_->read(t.started_seq, t.started_seq);
    if (started.empty()) continue;
    ToolResult r;
    r.ok = false;
    r.output = fmt::format(
        "interrupted: the MCP session ended while `{}` ran; its effects, if any, are unknown",
        t.name);
    events::ToolFinished fin = finished_payload(t.call_id, t.name, r, 0);
    fin.interrupted = true;
    store_->append_batch(with_effects(fin, started.front(), r));
  }
  sync();
}

std::optional<std::string> HarnessRun::refusal() {
  sync();
  if (state_.done) {
    return fmt::format("the run has finished ({}); start a new one with another --run-dir",
                       state_.finish_reason);
  }
  if (state_.goal.status == GoalStatus::kPaused || state_.goal.status == GoalStatus::kCleared) {
    return fmt::format(
        "the run's goal is {} (by `marathon goal` or a control client); `marathon goal resume "
        "{}` lets work go on",
        to_string(state_.goal.status), run_dir_.string());
  }
  BudgetUsed used = state_.used;
  if (state_.segment_open) {
    used.wall_s += std::max(0.0, double(now_us() - state_.last_event_us) / 1e6);
  }
  if (std::optional<BudgetItem> over = exhausted_budget(state_.limits, used)) {
    std::string why = fmt::format("{} budget used up ({:.6g} of {:.6g}); best {}", over->which,
                                  over->used, over->limit, num(state_.best_score));
    apply(state_, store_->append(make_event(events::RunFinished{"budget", why})));
    return "the run has finished: " + why;
  }
  return std::nullopt;
}

ToolOutcome HarnessRun::call(const std::string& name, const json& arguments) {
  DirectCall c{new_call_id(), name, arguments, events::ToolStarted::kMcp};
  DirectCallResult r = call_tool_logged(*store_, &state_, tools_, run_dir_, c);
  ToolOutcome o;
  if (!r.ran) {
    o.is_error = true;
    o.text = r.error;
    return o;
  }
  o.is_error = !r.result.ok;
  o.text = r.result.output;
  o.structured = {{"ok", r.result.ok},
                  {"call_id", c.call_id},
                  {"first_seq", r.events.front().seq},
                  {"last_seq", r.events.back().seq}};
  for (const Event& e : r.events) {
    if (is<events::EvalFinished>(e)) {
      o.structured["evaluation"] = e.payload;
      o.structured["evaluation"]["seq"] = e.seq;
    }
  }
  return o;
}

ToolOutcome HarnessRun::evaluate(const json& files, const std::string& strategy) {
  if (std::optional<std::string> no = refusal()) return {true, *no, json::object()};
  // Every file is checked before any is written: a refused call changes nothing.
  if (files.is_object()) {
    for (const auto& [path, content] : files.items()) {
      if (!is_safe_relative_path(path) || !is_editable(task_, path)) {
        json editable = task_.editable;
        return {true,
                fmt::format("evaluate refused: {} is not an editable file of task {} (editable: "
                            "{}); nothing was written",
                            path, task_.name, editable.dump()),
                json::object()};
      }
    }
    for (const auto& [path, content] : files.items()) {
      ToolOutcome w = call("write_file", {{"path", path}, {"content", content}});
      if (w.is_error) {
        w.text = "evaluate stopped: writing " + path + " failed: " + w.text;
        return w;
      }
    }
  }
  json args = json::object();
  if (!strategy.empty()) args["strategy"] = strategy;
  ToolOutcome o = call("evaluate", args);
  // A would-be best is re-measured before the answer goes back (core/confirmation.h), each
  // re-measurement logged before the next; the answer then says what it was confirmed at.
  bool remeasured = false;
  for (int i = 0; i < 1000; ++i) {
    std::optional<RemeasureDue> due = confirmation_due(state_);
    if (!due) break;
    ToolContext ctx = tool_context(*store_, &state_, run_dir_);
    events::EvalRemeasured p = remeasure(state_, *due, *store_, ctx);
    sync();
    apply(state_, store_->append(make_event(p)));
    remeasured = true;
  }
  if (remeasured) {
    auto n = [](double v) { return fmt::format("{:.4g}", v); };
    std::string best = "no correct evaluation yet";
    if (std::optional<Figure> f = best_figure(state_)) best = figure_text(*f, n);
    o.text += fmt::format("\nre-measured before it was announced; the run's best is now {}", best);
    o.structured["confirmation"] = confirmation_json(state_);
  }
  return o;
}

ToolOutcome HarnessRun::profile() {
  if (std::optional<std::string> no = refusal()) return {true, *no, json::object()};
  return call("profile", json::object());
}

ToolOutcome HarnessRun::note(const std::string& kind, const std::string& text) {
  if (std::optional<std::string> no = refusal()) return {true, *no, json::object()};
  return call("note", {{"kind", kind}, {"text", text}});
}

ToolOutcome HarnessRun::revert(const std::string& candidate) {
  if (std::optional<std::string> no = refusal()) return {true, *no, json::object()};
  return call("revert", {{"candidate", candidate}});
}

ToolOutcome HarnessRun::status() {
  sync();
  json s = to_json(state_);
  s.erase("ledger");  // the ledger tool gives it
  s["run_dir"] = fs::absolute(run_dir_).lexically_normal().string();
  s["ledger_entries"] = state_.ledger.size();
  const State& st = state_;
  std::string text = fmt::format(
      "run {} ({}): {}\ngoal [{}]: {} ({} {}, target {})\nbest {}{}, baseline {}\n"
      "evaluations {} ({} executed), tool calls {} of {}",
      st.run_id, s["run_dir"].get<std::string>(),
      st.done     ? "finished (" + st.finish_reason + ")"
      : st.paused ? "paused"
                  : "open",
      to_string(st.goal.status), st.goal.objective.substr(0, 200), st.goal.metric,
      to_string(st.goal.direction), num(st.goal.target), num(st.best_score),
      st.best_candidate.empty() ? "" : " (candidate " + st.best_candidate.substr(0, 12) + ")",
      num(st.baseline_score), st.evaluations, st.evaluations_executed, st.used.tool_calls,
      st.limits.max_tool_calls);
  return {false, text, s};
}

ToolOutcome HarnessRun::ledger() {
  sync();
  context::LedgerViewOptions v;
  v.direction = state_.goal.direction;
  std::string text = context::render_ledger_view(state_.ledger, v);
  return {
      false, text.empty() ? "the ledger is empty" : text, {{"entries", to_json(state_)["ledger"]}}};
}

ToolOutcome HarnessRun::best() {
  sync();
  json s = {
      {"metric", state_.goal.metric},
      {"direction", state_.goal.direction},
      {"best_score", state_.best_score ? json(*state_.best_score) : json(nullptr)},
      {"best_candidate",
       state_.best_candidate.empty() ? json(nullptr) : json(state_.best_candidate)},
      {"baseline_score", state_.baseline_score ? json(*state_.baseline_score) : json(nullptr)},
      {"files", best_files()}};
  if (!state_.best_score) return {false, "no correct evaluation yet", s};
  std::string text = fmt::format("best {} {} (candidate {}); files:", state_.goal.metric,
                                 num(state_.best_score), state_.best_candidate);
  for (const auto& [path, content] : s["files"].items()) {
    text += fmt::format("\n- {} ({} bytes, resource marathon://best/{})", path,
                        content.get<std::string>().size(), path);
  }
  return {false, text, s};
}

std::string HarnessRun::file_of(const std::string& sha) const {
  std::optional<std::string> bytes = store_->get_blob(sha);
  if (!bytes) throw StoreError(fmt::format("{}: blob {} is missing", store_->path(), sha));
  return *bytes;
}

std::map<std::string, std::string> HarnessRun::starter_files() const {
  std::map<std::string, std::string> out;
  for (const auto& [path, sha] : starter_) out[path] = file_of(sha);
  return out;
}

std::map<std::string, std::string> HarnessRun::best_files() const {
  std::map<std::string, std::string> out;
  if (state_.best_candidate.empty()) return out;
  auto it = state_.candidates.find(state_.best_candidate);
  if (it == state_.candidates.end()) return out;
  for (const auto& [path, sha] : it->second) out[path] = file_of(sha);
  return out;
}

std::string HarnessRun::task_text() const {
  json editable = task_.editable, starter = task_.starter;
  std::string out =
      fmt::format("# Task {}\n\n{}\n\n## Contract\n\n", task_.name, task_.description);
  out += fmt::format("- metric: {} ({} is better){}\n", task_.goal.metric,
                     task_.goal.direction == Direction::kMin ? "lower" : "higher",
                     task_.goal.target ? fmt::format(", target {:.6g}", *task_.goal.target) : "");
  out +=
      fmt::format("- editable files: {}\n- starter files: {} (resources marathon://starter/...)\n",
                  editable.dump(), starter.dump());
  out += fmt::format("- runs on: {}\n", task_.needs_gpu ? "a GPU" : "the CPU");
  if (!task_.rules.empty()) out += "- rules: " + task_.rules.dump() + "\n";
  out +=
      "\n## Working on it\n\n`evaluate` with `files` (path -> full content of editable files) "
      "writes them and runs the task's evaluator: correctness on fresh inputs, the score, rule "
      "violations. A candidate already evaluated is answered from the result cache. `note` keeps "
      "what you learn in the ledger, `revert` puts back an evaluated candidate, `best` and "
      "`status` say where the run stands.\n";
  return out;
}

}  // namespace marathon::mcp
