// Starting and re-opening a run: the run directory, run.created with the starter files, and the
// workspace rebuilt from the log on resume. The loop itself is in runner.h.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "core/event_store.h"
#include "core/events.h"
#include "core/state.h"
#include "goal/task_spec.h"

namespace marathon {

// What `marathon run` was asked for. Unset optionals fall back to the task's [limits], then to the
// defaults of BudgetLimits.
struct NewRunOptions {
  std::filesystem::path run_dir;
  std::string policy;       // llm | search | replay
  std::string model;        // PROVIDER:MODEL (llm policy)
  std::string base_url;     // empty: the provider's default
  std::string api_key_env;  // the NAME of the variable holding the key; the key is never logged
  std::optional<int64_t> max_tool_calls;
  std::optional<double> max_hours;
  std::optional<double> max_cost_usd;
  std::optional<int64_t> max_tokens;
  std::optional<double> max_gpu_s;
  std::optional<double> target;
  std::optional<int64_t> context_window;
  std::optional<double> model_timeout_s;  // one HTTP attempt of a model call (--model-timeout)
  int goal_auto_pause_turns = 5;       // goal turns without progress before the goal pauses itself
  json extra_config = json::object();  // merged into config (e.g. replay's source run)
  std::string objective_note;  // appended to the task's objective (a branch: loop/branches.h)
};

// The run.created payload (pure): task spec, goal, budget, config. Never holds an API key.
events::RunCreated run_created_payload(const TaskSpec& task, const NewRunOptions& o,
                                       const std::string& run_id);

// Creates <run_dir> (absent or an empty folder), appends run.created and one workspace.written per
// starter file in one transaction, and writes the workspace. Throws StoreError or
// std::runtime_error naming the directory or file on failure.
std::unique_ptr<EventStore> create_run(const TaskSpec& task, const NewRunOptions& o);

// Opens an existing run for the runner: checks it, appends run.resumed and rewrites the workspace
// exactly as the log says (files the log does not know are removed). Returns nullptr, with the
// folded state in *state, when the run has already finished (nothing is appended then).
// `config` (e.g. {"model_timeout_s": 60} from `resume --model-timeout`) is logged in run.resumed
// and overrides those keys of the run's config from then on; *state includes it.
std::unique_ptr<EventStore> reopen_run(const std::filesystem::path& run_dir, State* state,
                                       const json& config = json::object());

// The task folder a run carries on with on this machine, checked before anything is appended.
// `given` (`resume --task`, the MCP server's --task) names the task's folder here, e.g. after the
// run folder was copied to another machine; empty: the folder the log records (config.task_dir).
// Returns the folder to record in run.resumed's config when it is not the recorded one, nullopt
// when it is. Throws std::invalid_argument saying what is wrong: the recorded folder is not here
// and none was given, or the given folder's task.toml is not the task the run was created with
// (a moved run keeps its goal, evaluator and limits; a changed task is a new run).
std::optional<std::string> task_dir_here(const State& state, const std::filesystem::path& given);

}  // namespace marathon
