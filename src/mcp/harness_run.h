// HarnessRun: the run behind `marathon mcp`. An MCP client's agent works on a task through it, and
// everything it does is a run like any other: one log in the usual format (run.created with policy
// "mcp", tool.started/tool.finished around each call, workspace.written, eval.finished,
// ledger.noted), the run directory locked for the session, the result cache and the evaluator's
// rules applying, the runner's own tools doing the work (loop/tool_call_log.h). The session ends
// with run.paused{session_ended}; `marathon mcp --run-dir` on the same directory carries on.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/event_store.h"
#include "core/run_lock.h"
#include "core/state.h"
#include "goal/task_spec.h"
#include "tools/tool_registry.h"

namespace marathon::mcp {

struct HarnessOptions {
  std::filesystem::path task_dir;
  std::filesystem::path run_dir;  // empty: runs/<task>-mcp-<time>
  std::string sandbox_disabled;   // non-empty: the launches are unsandboxed, and why (logged)
};

// What a tool call gave: the text a model reads, the structured result, whether it failed.
struct ToolOutcome {
  bool is_error = false;
  std::string text;
  json structured = json::object();
};

// Why the session cannot start (a bad task, a run of another task, a finished run, a locked
// directory): the message names the folder and the problem.
class HarnessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HarnessRun {
 public:
  // Creates the run (a new or empty --run-dir) or carries on the one there. Throws HarnessError.
  explicit HarnessRun(const HarnessOptions& options);
  ~HarnessRun();  // ends the session (run.paused) unless the run has finished
  HarnessRun(const HarnessRun&) = delete;
  HarnessRun& operator=(const HarnessRun&) = delete;

  // The tools. `files`: path -> content of editable files, written before the evaluation.
  ToolOutcome evaluate(const json& files, const std::string& strategy);
  ToolOutcome profile();
  ToolOutcome note(const std::string& kind, const std::string& text);
  ToolOutcome revert(const std::string& candidate);
  ToolOutcome status();
  ToolOutcome ledger();
  ToolOutcome best();

  // The resources' contents.
  std::string task_text() const;  // markdown: the task's description and contract
  std::map<std::string, std::string> starter_files() const;
  std::map<std::string, std::string> best_files() const;  // empty: no correct candidate yet

  const State& state() const { return state_; }
  const std::filesystem::path& run_dir() const { return run_dir_; }
  const TaskSpec& task() const { return task_; }

 private:
  // Why a call that changes the run is refused now (finished, budget used up, goal paused or
  // cleared); nullopt when it may go ahead. Logs run.finished{budget} when the budget ran out.
  std::optional<std::string> refusal();
  ToolOutcome call(const std::string& name, const json& arguments);
  void finish_interrupted_calls();
  void sync();
  std::string file_of(const std::string& sha) const;

  TaskSpec task_;
  std::filesystem::path run_dir_;
  std::optional<RunLock> lock_;
  std::unique_ptr<EventStore> store_;
  State state_;
  ToolRegistry tools_;
  std::map<std::string, std::string> starter_;  // path -> sha, as run.created's batch wrote them
};

}  // namespace marathon::mcp
