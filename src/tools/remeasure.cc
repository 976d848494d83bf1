#include "tools/remeasure.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "core/workspace_snapshot.h"
#include "eval/evaluator.h"
#include "eval/executor.h"
#include "eval/result_cache.h"
#include "tools/tool_evaluate.h"

namespace marathon {

namespace fs = std::filesystem;

int64_t remeasure_seed(const std::string& candidate, int64_t index) {
  const std::string h = sha256_hex(fmt::format("remeasure\n{}\n{}", candidate, index));
  const uint64_t v = std::stoull(h.substr(0, 15), nullptr, 16);
  return static_cast<int64_t>(v % (2147483648ULL - 10000ULL));
}

namespace {

// Removes the folder when the re-measurement is over, whatever happened.
class ScratchDir {
 public:
  explicit ScratchDir(fs::path p) : path_(std::move(p)) {}
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

events::EvalRemeasured remeasure(const State& s, const RemeasureDue& due, const EventStore& store,
                                 ToolContext& ctx) {
  events::EvalRemeasured p;
  p.candidate = due.candidate;
  p.cache_key = due.cache_key;
  p.index = due.index;
  p.phase = due.phase;
  p.seed = remeasure_seed(due.candidate, due.index);
  auto lost = [&](const std::string& why) {
    p.status = EvalStatus::kNonzeroExit;
    p.result = eval::failed_result(p.status, "the re-measurement could not be started: " + why);
    spdlog::warn("re-measurement {} of candidate {}: {}", due.index, due.candidate.substr(0, 12),
                 why);
    return p;
  };
  auto files = s.candidates.find(due.candidate);
  if (files == s.candidates.end()) return lost("the log holds no files for the candidate");
  TaskSpec task;
  try {
    task = task_of_run(s);
  } catch (const std::exception& e) {
    return lost(e.what());
  }
  ScratchDir dir(ctx.run_dir / "remeasure" / due.candidate.substr(0, 16));
  std::vector<eval::CandidateFile> read;
  try {
    std::error_code ec;
    fs::remove_all(dir.path(), ec);
    fs::create_directories(dir.path());
    materialize_workspace(store, files->second, dir.path(), /*remove_others=*/true);
    read = eval::read_candidate(task, dir.path());
  } catch (const std::exception& e) {
    return lost(e.what());
  }

  eval::EvalOutcome o;
  eval::EvalOptions options;
  options.seed = static_cast<uint64_t>(p.seed);
  if (ctx.executor) {
    eval::EvalRequest req;
    req.task = &task;
    req.task_dir = s.config.value("task_dir", "");
    req.candidate_dir = dir.path();
    req.files = std::move(read);
    req.candidate = due.candidate;
    req.cache_key = due.cache_key;
    // The same for a re-measurement and its re-run after a crash (a Ray job is found again).
    req.id = fmt::format("{}-remeasure-{}-{}", s.run_id, due.candidate.substr(0, 12), due.index);
    req.options = options;
    eval::ExecutedEval x = ctx.executor->evaluate(req, ctx.log_now);
    o = std::move(x.outcome);
    p.executor = events::ExecutorRef{ctx.executor->spec().to_string(), x.where, x.node};
  } else {
    o = eval::run_evaluator(task, dir.path(), options);
  }
  p.status = o.status;
  p.result = o.result;
  p.elapsed_s = o.elapsed_s;
  p.gpu_s = task.needs_gpu ? o.elapsed_s : 0.0;
  return p;
}

}  // namespace marathon
