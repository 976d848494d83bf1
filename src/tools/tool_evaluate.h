// `evaluate`: the task's evaluator on the current workspace. The candidate hash and the result
// cache key come from src/eval; a key already in State::eval_cache is served from the log (an
// evaluation is never paid twice, also across resume). The effect is one eval.finished event
// {candidate, cache_key, cached, status, result, elapsed_s, gpu_s, strategy}, preceded by
// workspace.written events for editable files changed on disk behind the log's back (by `run`).
// The candidate is read without following links (eval::read_candidate); one with no editable file,
// or with an editable entry that is a link or special file, is refused with nothing logged.
#pragma once

#include <memory>
#include <string>

#include "core/state.h"
#include "goal/task_spec.h"
#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_evaluate_tool();

// The task of a run: task.toml re-read from config.task_dir (the evaluator needs its folder).
// Throws TaskError / std::runtime_error naming the folder.
TaskSpec task_of_run(const State& state);

// The compact text the model gets for one evaluation (pure).
std::string describe_evaluation(const events::EvalFinished& p, const State& before);

}  // namespace marathon
