// Tool: one action the agent can take. Tools never append events themselves: they return the events
// their effect implies (e.g. workspace.written), and the loop appends them together with
// tool.finished in one transaction. The exception: what an executor must make durable while
// `evaluate` runs (ToolContext::log_now: eval.submitted before a Ray job is submitted).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/state.h"

namespace marathon {

namespace eval {
class Executor;
class SharedResults;
}  // namespace eval

struct ToolContext {
  std::filesystem::path workspace;  // the run's workspace root; tools are confined to it
  const State* state = nullptr;
  std::filesystem::path run_dir;
  std::function<std::string(const std::string& bytes)> put_blob;  // returns sha256
  std::function<std::string(const std::string& sha)> get_blob;    // throws if missing
  // Where `evaluate` runs evaluations (src/eval/executor.h); null: on this host, one at a time.
  eval::Executor* executor = nullptr;
  // Appends an event durably while the tool runs (an executor's eval.submitted must be in the log
  // before its job is submitted); empty where nothing may be logged before tool.finished.
  std::function<void(const NewEvent&)> log_now;
  // "<run id>-<tool.started seq>": the same for a call and its re-run on resume.
  std::string call_key;
  // The results of the run's other branches (src/eval/shared_results.h); null: a single branch.
  eval::SharedResults* shared_results = nullptr;
  // The run's final confirmation (core/confirmation.h): re-measures the top candidates, each
  // re-measurement logged before the next; `finish` calls it before it ends the run. Empty: none.
  std::function<void()> confirm_final;
};

struct ToolResult {
  bool ok = true;
  std::string output;            // what the model sees (capped by the tool)
  std::string full_output_sha;   // blob with the uncapped output, if it was capped
  std::vector<NewEvent> events;  // effects to log with tool.finished
  bool finishes_run = false;     // `finish`
  double gpu_s = 0;
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual json parameters() const = 0;  // JSON schema of the arguments object
  // Arguments have already been validated against parameters(). Failures are ToolResult{ok=false}
  // with a clear message, never exceptions escaping to the loop.
  virtual ToolResult run(const json& arguments, ToolContext& ctx) = 0;
  // Idempotent tools are re-run on resume if they were in flight at a crash.
  virtual bool idempotent() const { return false; }
};

}  // namespace marathon
