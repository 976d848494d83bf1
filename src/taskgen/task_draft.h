// The task `marathon init` writes for a repository (docs/tasks.md, "Repository tasks"): what was
// asked, the defaults it infers from the committed files and the commands, and the task.toml text.
// Pure: no file is read or written here (repo_snapshot.h does the I/O).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/events.h"

namespace marathon::taskgen {

// What `marathon init` was asked, from its flags or the answers of --interactive.
struct InitRequest {
  std::string task_dir;
  std::string repo;
  std::string metric;       // shell command; the last line of its stdout is the number
  std::string metric_time;  // or: shell command timed by the evaluator (seconds, min)
  std::string direction = "min";
  std::string check;                  // shell command that must exit 0 ("" = none)
  std::string guard;                  // shell command run after the check, must exit 0 ("" = none)
  std::vector<std::string> editable;  // globs; empty = every committed file
  std::vector<std::string> protect;   // globs, added to the inferred ones
  int runs = 3;                       // metric runs per evaluation (the median is the score)
  std::string name;                   // "" = from the task folder's name
  std::string metric_name = "metric";
  std::string description;  // "" = generated
  double timeout_s = 0;     // 0 = from the time the starter's evaluation took
};

inline constexpr int kMaxRuns = 100;

// The first flag that cannot be used, as "--flag: what is wrong"; nullopt when all can.
std::optional<std::string> request_problem(const InitRequest& r);

// A task name (docs/tasks.md: [a-z0-9][a-z0-9._-]*) made from a folder name: lower-cased, other
// characters turned into '-', leading punctuation dropped; "" when nothing is left.
std::string task_name_for(const std::string& folder_name);

// A glob that matches exactly `path` (fnmatch's special characters escaped).
std::string literal_glob(const std::string& path);

// Editable globs covering every file of `files`: "*" for the top folder, "dir/*" for each folder
// holding a file (fnmatch's `*` does not cross `/`, so each folder needs its own glob).
std::vector<std::string> folder_globs(const std::vector<std::string>& files);

// The protected globs `marathon init` proposes for `files` (the committed files) and the metric
// and check commands: the files and folders the commands name, the build files of the tools they
// start (make: Makefile, npm: package.json, cargo: Cargo.toml, pytest: its configuration), and
// conventional test files and folders. Sorted, unique.
std::vector<std::string> inferred_protected(const std::vector<std::string>& files,
                                            const std::string& metric, const std::string& check);

// The file names that steer test runners, build tools and interpreters (fnmatch patterns matched
// on a path's last components, `.cargo/config.toml` on two): no candidate may add, change or
// delete one anywhere in the tree. The same list as harness/repo_eval.py's STEERING (a test
// compares them); docs/tasks.md explains each.
const std::vector<std::string>& steering_patterns();

// The committed files of `files` that `command` names (as words, "./" and trailing "/" dropped).
std::vector<std::string> named_files(const std::vector<std::string>& files,
                                     const std::string& command);

// Why a metric command looks like it prints a time it measured itself (a candidate's code runs in
// that process and can patch its clock), or nullopt: the command itself (timeit, a benchmark
// plugin) or the text of a file it names (`texts`: path -> content) reading a clock.
std::optional<std::string> in_process_timing(
    const std::string& metric, const std::vector<std::pair<std::string, std::string>>& texts);

// The test folder a check command runs with pytest or unittest (a folder of `files` that the
// command names and that holds test files), where the evaluator puts its canary; "" when none.
std::string canary_folder(const std::vector<std::string>& files, const std::string& check);

// The first glob of `globs` that matches none of `files`.
std::optional<std::string> unmatched_glob(const std::vector<std::string>& globs,
                                          const std::vector<std::string>& files);

// The globs of `globs` that match at least one of `files`, in order.
std::vector<std::string> globs_matching(const std::vector<std::string>& globs,
                                        const std::vector<std::string>& files);

// Everything task.toml says.
struct TaskDraft {
  std::string name;
  std::string description;
  std::string metric_name = "metric";
  Direction direction = Direction::kMin;
  std::string metric;
  bool wall_time = false;  // the metric is the seconds `metric` takes, timed by the evaluator
  std::optional<std::string> metric_output;  // the starter's output hash (wall_time only)
  std::string check;
  std::string canary;                // test folder for the evaluator's canary ("" = none)
  std::string integrity;             // --guard: must exit 0 after the check ("" = none)
  std::vector<std::string> starter;  // the committed files, relative to repo/
  std::vector<std::string> editable;
  std::vector<std::string> protect;
  int runs = 3;
  double timeout_s = 600;
  std::optional<double> baseline;  // the starter's score, once measured
  std::string origin;              // "<repository> at <commit>", for the file's header comment
};

inline constexpr const char* kRepoFolder = "repo";            // the snapshot, the starter folder
inline constexpr const char* kEvaluatorFile = "evaluate.py";  // a copy of harness/repo_eval.py

// The description the model reads when none was given: the goal, the commands, what may change.
std::string default_description(const TaskDraft& d);

// The task.toml text (parsed back by goal/task_spec.h; the [rules] are read by the evaluator).
std::string render_task_toml(const TaskDraft& d);

// `s` as a TOML basic string, quotes included; as a multi-line basic string ("""...""").
std::string toml_string(const std::string& s);
std::string toml_multiline(const std::string& s);

// The evaluator's timeout for a starter whose evaluation took `elapsed_s`: five times that plus a
// minute, rounded up to 10 s, at most a day.
double timeout_for(double elapsed_s);

}  // namespace marathon::taskgen
