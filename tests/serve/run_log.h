// A run written event by event for the dashboard's tests: created from the tiny task as `marathon
// run` creates it, then file writes, tool calls, evaluations of every kind, profiles, notes, goal
// changes and a compaction appended the way a runner appends them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "../loop/loop_test_support.h"
#include "core/event_store.h"
#include "core/workspace_snapshot.h"
#include "goal/task_spec.h"
#include "loop/run_setup.h"

namespace marathon::testing {

class RunLog {
 public:
  explicit RunLog(const fs::path& run_dir) : dir_(run_dir) {
    NewRunOptions o;
    o.run_dir = run_dir;
    o.policy = "search";
    store_ = create_run(load_task(tiny_task()), o);
    files_ = workspace_at(*store_, store_->last_seq());
  }

  EventStore& store() { return *store_; }
  const fs::path& dir() const { return dir_; }

  Event append(const std::string& type, json payload) {
    NewEvent e;
    e.type = type;
    e.payload = std::move(payload);
    return store_->append(e);
  }

  void write(const std::string& text, const std::string& path = "solution.txt") {
    std::string sha = store_->put_blob(text);
    append(events::WorkspaceWritten::kType, {{"path", path}, {"sha", sha}, {"size", text.size()}});
    files_[path] = sha;
  }
  std::string candidate() const { return candidate_hash(files_); }

  void tool(const std::string& name, const std::string& output, bool ok = true) {
    std::string id = "call-" + std::to_string(++calls_);
    append(events::ToolStarted::kType,
           {{"call_id", id}, {"name", name}, {"arguments", json::object()}});
    append(events::ToolFinished::kType,
           {{"call_id", id}, {"name", name}, {"ok", ok}, {"output", output}});
  }

  // An evaluation of the current files (after an `evaluate` tool call, as the runner logs it).
  Event eval(std::optional<double> score, bool correct = true, const std::string& status = "ok",
             json violations = json::array(), const std::string& strategy = "a try") {
    tool("evaluate", "evaluated");
    json result = {{"correct", correct}, {"violations", violations}, {"metrics", {{"ms", 1.5}}}};
    result["score"] = score ? json(*score) : json(nullptr);
    return append(events::EvalFinished::kType, {{"candidate", candidate()},
                                                {"cache_key", "key-" + std::to_string(calls_)},
                                                {"cached", false},
                                                {"status", status},
                                                {"result", result},
                                                {"strategy", strategy}});
  }

 private:
  fs::path dir_;
  std::unique_ptr<EventStore> store_;
  WorkspaceFiles files_;
  int calls_ = 0;
};

}  // namespace marathon::testing
