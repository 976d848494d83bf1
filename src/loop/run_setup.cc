#include "loop/run_setup.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/fold.h"
#include "core/run_dir.h"
#include "core/run_lock.h"
#include "core/workspace_snapshot.h"

namespace marathon {

namespace fs = std::filesystem;

namespace {

std::string read_file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read starter file {}", p.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

events::RunCreated run_created_payload(const TaskSpec& task, const NewRunOptions& o,
                                       const std::string& run_id) {
  BudgetLimits limits;
  const json& tl = task.limits;
  if (tl.contains("max_tool_calls")) limits.max_tool_calls = tl["max_tool_calls"].get<int64_t>();
  if (tl.contains("max_wall_s")) limits.max_wall_s = tl["max_wall_s"].get<double>();
  if (tl.contains("max_tokens")) limits.max_tokens = tl["max_tokens"].get<int64_t>();
  if (tl.contains("max_cost_usd")) limits.max_cost_usd = tl["max_cost_usd"].get<double>();
  if (tl.contains("max_gpu_s")) limits.max_gpu_s = tl["max_gpu_s"].get<double>();
  if (o.max_tool_calls) limits.max_tool_calls = *o.max_tool_calls;
  if (o.max_hours) limits.max_wall_s = *o.max_hours * 3600.0;
  if (o.max_cost_usd) limits.max_cost_usd = *o.max_cost_usd;
  if (o.max_tokens) limits.max_tokens = *o.max_tokens;
  if (o.max_gpu_s) limits.max_gpu_s = *o.max_gpu_s;

  std::string objective = task.description;
  if (!o.objective_note.empty()) objective += "\n\n" + o.objective_note;
  events::RunCreated p;
  p.run_id = run_id;
  p.task = to_json(task);
  p.goal = events::GoalSpec{objective, task.goal.metric, task.goal.direction,
                            o.target ? o.target : task.goal.target};

  json config = o.extra_config.is_object() ? o.extra_config : json::object();
  config["policy"] = o.policy;
  config["task_dir"] = fs::absolute(task.dir).lexically_normal().string();
  config["goal_auto_pause_turns"] = o.goal_auto_pause_turns;
  if (!o.model.empty()) config["model"] = o.model;
  if (!o.base_url.empty()) config["base_url"] = o.base_url;
  if (!o.api_key_env.empty()) config["api_key_env"] = o.api_key_env;
  if (o.context_window) config["context_window"] = *o.context_window;
  if (o.model_timeout_s) config["model_timeout_s"] = *o.model_timeout_s;
  // Confirmed best (core/confirmation.h): how the run re-measures a would-be best, from the task.
  if (!config.contains("confirm")) {
    config["confirm"] =
        confirm_config({task.goal.confirm, task.goal.confirm_share, task.goal.confirm_top});
  }
  p.task_dir = config["task_dir"].get<std::string>();
  p.config = std::move(config);

  events::BudgetSpec& b = p.budget.emplace();
  b.max_tool_calls = limits.max_tool_calls;
  b.max_wall_s = limits.max_wall_s;
  b.max_tokens = limits.max_tokens;
  b.max_cost_usd = limits.max_cost_usd;
  b.max_gpu_s = limits.max_gpu_s;
  return p;
}

std::unique_ptr<EventStore> create_run(const TaskSpec& task, const NewRunOptions& o) {
  RunDir dir = create_run_dir(o.run_dir);
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kCreate);

  std::vector<NewEvent> batch;
  batch.push_back(make_event(run_created_payload(task, o, new_run_id())));
  WorkspaceFiles files;
  for (const std::string& rel : task.starter) {
    std::string bytes = read_file_bytes(task.starter_path() / rel);
    std::string sha = store->put_blob(bytes);
    events::WorkspaceWritten w;
    w.path = rel;
    w.sha = sha;
    w.size = static_cast<int64_t>(bytes.size());
    w.source = events::WorkspaceWritten::kStarter;
    batch.push_back(make_event(w));
    files[rel] = sha;
  }
  store->append_batch(batch);
  materialize_workspace(*store, files, dir.workspace(), /*remove_others=*/true);
  return store;
}

std::unique_ptr<EventStore> reopen_run(const fs::path& run_dir, State* state, const json& config) {
  RunDir dir = existing_run_dir(run_dir);
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kOpen);
  *state = fold(store->read());
  if (!state->created) {
    throw StoreError(fmt::format("{}: the log holds no run.created event", store->path()));
  }
  if (state->done) return nullptr;
  events::RunResumed resumed;
  resumed.reason = "resume";
  if (config.is_object()) resumed.config = config;
  resumed.host = this_host();
  apply(*state, store->append(make_event(resumed)));
  std::error_code ec;
  fs::create_directories(dir.workspace(), ec);
  materialize_workspace(*store, state->workspace, dir.workspace(), /*remove_others=*/true);
  return store;
}

std::optional<std::string> task_dir_here(const State& state, const fs::path& given) {
  const std::string recorded = state.config.value("task_dir", "");
  if (given.empty()) {
    std::error_code ec;
    if (recorded.empty() || fs::exists(fs::path(recorded) / "task.toml", ec)) return std::nullopt;
    throw std::invalid_argument(fmt::format(
        "the run's task folder {} (recorded when the run was created) holds no task.toml on this "
        "machine; if the run folder was moved here, name the same task's folder here with --task "
        "DIR",
        recorded));
  }
  // The recorded folder itself: as before a move (a task.toml edited in place is the evaluator's
  // warning, tools/tool_evaluate.h).
  if (fs::absolute(given).lexically_normal().string() == recorded) return std::nullopt;
  TaskSpec task;
  try {
    task = load_task(given);
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("--task {}: {}", given.string(), e.what()));
  }
  const std::string here = fs::absolute(task.dir).lexically_normal().string();
  const json spec = to_json(task);
  if (spec != state.task) {
    std::string differs;
    for (const auto& [key, value] : spec.items()) {
      if (!state.task.contains(key) || state.task.at(key) != value) {
        differs += (differs.empty() ? "" : ", ") + key;
      }
    }
    throw std::invalid_argument(fmt::format(
        "--task {}: its task.toml is not the task this run was created with (it differs in: {}); "
        "a run carries on with its own task, a changed task is a new run",
        given.string(), differs.empty() ? "fields the run records and this one lacks" : differs));
  }
  if (here == recorded) return std::nullopt;
  return here;
}

}  // namespace marathon
