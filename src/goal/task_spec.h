// TaskSpec: a task folder's task.toml, parsed and validated (the format: docs/tasks.md).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/events.h"

namespace marathon {

// A task.toml that cannot be used. what() reads "<file>[:<line>]: <key>: <problem>".
class TaskError : public std::runtime_error {
 public:
  TaskError(std::string file, std::string key, int line, const std::string& problem);
  const std::string& file() const { return file_; }
  const std::string& key() const { return key_; }
  int line() const { return line_; }  // 0 when unknown

 private:
  std::string file_;
  std::string key_;
  int line_;
};

struct EvaluatorSpec {
  std::vector<std::string> argv;  // list form (tokens {python}, {task_dir}, {candidate_dir})
  std::string shell;  // string form, run by /bin/sh -c; exactly one of argv/shell is set
  double timeout_s = 0;
  std::string version;
  // Folders outside the task folder that the evaluator reads (relative to the task folder, or
  // absolute; each must exist): read-only in the sandbox, beside the folders of the files the
  // command names. Refused: `/`, the home folder or a folder holding it, a folder holding the
  // task (the candidate reads whatever the evaluator can). to_json() names them only when set.
  std::vector<std::string> reads;
};

struct GoalSpec {
  std::string metric;
  Direction direction = Direction::kMax;
  std::optional<double> target;
  // Confirmed best (docs/evaluation.md): re-measurements of a candidate before it is announced as
  // the best (0: none), their budget (a share of max_tool_calls and max_gpu_s), and how many of
  // the top candidates the run's end confirms. to_json() names each only when it is not the
  // default (core/confirmation.h).
  int64_t confirm = 3;
  double confirm_share = 0.5;
  int64_t confirm_top = 3;
};

struct TaskSpec {
  std::filesystem::path dir;  // the task folder (absolute); not part of to_json()
  std::string name;
  std::string description;
  bool needs_gpu = false;
  std::string starter_dir = "starter";  // relative to dir
  std::vector<std::string> starter;     // relative to starter_dir
  std::vector<std::string> editable;    // globs over workspace paths
  // More globs write_file and edit_file may write besides the editable files and scratch/ (not
  // part of a candidate); to_json() names them only when there are some.
  std::vector<std::string> writable;
  GoalSpec goal;
  EvaluatorSpec evaluator;
  json rules = json::object();
  json limits = json::object();  // optional default budget: max_tool_calls, max_wall_s, ...
  json prices = json::object();  // model -> {prompt, completion} USD per million tokens
  // `finish` is refused until at least one evaluation was correct ([goal]
  // finish_needs_correct_evaluation = false lifts it; to_json() names it only then).
  bool finish_needs_correct_evaluation = true;

  std::filesystem::path starter_path() const { return dir / starter_dir; }
};

// Reads and validates <dir>/task.toml. Throws TaskError (file, key, line) for a missing folder or
// file, a TOML syntax error, a missing or mistyped key, a bad value, or a starter file that is not
// there.
TaskSpec load_task(const std::filesystem::path& dir);

// Parses task.toml text; `file` names it in errors, `dir` is where starter files are checked (an
// empty dir skips the check). load_task() is this plus reading the file.
TaskSpec parse_task(const std::string& toml_text, const std::string& file,
                    const std::filesystem::path& dir);

// The spec as JSON (recorded in run.created, and in canonical form part of the result cache key).
json to_json(const TaskSpec& spec);
// sorted keys, no whitespace: the canonical form
std::string canonical_json(const TaskSpec& spec);

// True when a workspace path matches one of the editable globs (fnmatch, FNM_PATHNAME).
bool is_editable(const TaskSpec& spec, const std::string& path);
bool glob_match(const std::string& pattern, const std::string& path);

// The folders of `[evaluator] reads`, each absolute and normalised (a relative one against the
// task folder, a trailing "/" dropped).
std::vector<std::filesystem::path> evaluator_read_folders(const TaskSpec& spec);

// The evaluator argv with {python}, {task_dir} and {candidate_dir} substituted; a string command
// becomes {"/bin/sh", "-c", command}.
std::vector<std::string> evaluator_argv(const TaskSpec& spec, const std::string& python,
                                        const std::filesystem::path& candidate_dir);

}  // namespace marathon
