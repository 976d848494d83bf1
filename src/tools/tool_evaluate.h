// `evaluate`: the task's evaluator on the current workspace. The candidate hash and the result
// cache key come from src/eval; a key already in State::eval_cache is served from the log (an
// evaluation is never paid twice, also across resume). The effect is one eval.finished event
// {candidate, cache_key, cached, status, result, elapsed_s, gpu_s, strategy}, preceded by
// workspace.written events for editable files changed on disk behind the log's back (by `run`).
// The candidate is read without following links (eval::read_candidate); one with no editable file,
// or with an editable entry that is a link or special file, is refused with nothing logged.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/state.h"
#include "eval/result_cache.h"
#include "goal/task_spec.h"
#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_evaluate_tool();

// The task of a run: task.toml re-read from config.task_dir (the evaluator needs its folder).
// Throws TaskError / std::runtime_error naming the folder.
TaskSpec task_of_run(const State& state);

// The candidate on disk (`files`, as eval::read_candidate read them) against the log's workspace:
// appends to `out` a workspace.written (source sync) for each editable file changed behind the
// log's back (by `run`) and a deletion for each one gone, putting the new contents as blobs
// (`put_blob` may be empty: no blob is kept). Returns path -> content hash of the candidate.
std::map<std::string, std::string> sync_candidate(
    const TaskSpec& task, const State& s, const std::vector<eval::CandidateFile>& files,
    const std::function<std::string(const std::string&)>& put_blob, std::vector<NewEvent>* out);

// The compact text the model gets for one evaluation (pure).
std::string describe_evaluation(const events::EvalFinished& p, const State& before);

}  // namespace marathon
