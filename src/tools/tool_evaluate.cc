#include "tools/tool_evaluate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/eval_result.h"
#include "eval/evaluator.h"
#include "eval/executor.h"
#include "eval/result_cache.h"
#include "eval/shared_results.h"

namespace marathon {

namespace fs = std::filesystem;

TaskSpec task_of_run(const State& state) {
  std::string dir = state.config.value("task_dir", "");
  if (dir.empty()) throw std::runtime_error("the run's config records no task_dir");
  TaskSpec task = load_task(dir);
  if (json(to_json(task)) != state.task) {
    spdlog::warn(
        "{}/task.toml changed since the run was created; evaluating with the file as it "
        "is now, caching under the recorded spec",
        dir);
  }
  return task;
}

namespace {

std::string num(const json& v) {
  if (v.is_number()) return fmt::format("{:.4g}", v.get<double>());
  return v.is_null() ? "-" : v.dump();
}

std::string short_num(double v) { return fmt::format("{:.4g}", v); }

std::string metrics_text(const json& m) {
  if (!m.is_object() || m.empty()) return "";
  std::string s;
  int n = 0;
  for (const auto& [k, v] : m.items()) {
    if (++n > 10) {
      s += ", ...";
      break;
    }
    s += fmt::format("{}{}={}", s.empty() ? "" : ", ", k, v.is_number() ? num(v) : v.dump());
  }
  return s;
}

}  // namespace

std::map<std::string, std::string> sync_candidate(
    const TaskSpec& task, const State& s, const std::vector<eval::CandidateFile>& files,
    const std::function<std::string(const std::string&)>& put_blob, std::vector<NewEvent>* out) {
  std::map<std::string, std::string> disk;
  for (const eval::CandidateFile& f : files) {
    disk[f.path] = f.hash_value;
    auto it = s.workspace.find(f.path);
    if (it != s.workspace.end() && it->second == f.hash_value) continue;
    if (put_blob) put_blob(f.bytes);
    events::WorkspaceWritten w;
    w.path = f.path;
    w.sha = f.hash_value;
    w.size = static_cast<int64_t>(f.bytes.size());
    w.source = events::WorkspaceWritten::kSync;
    out->push_back(make_event(w));
  }
  for (const auto& [path, sha] : s.workspace) {
    if (is_editable(task, path) && !disk.count(path)) {
      events::WorkspaceWritten w;
      w.path = path;
      w.deleted = true;
      w.source = events::WorkspaceWritten::kSync;
      out->push_back(make_event(w));
    }
  }
  return disk;
}

std::string describe_evaluation(const events::EvalFinished& p, const State& before) {
  const EvalResult r = read_eval_result(p.result);
  std::string cand = p.candidate.substr(0, 12);
  std::string out = fmt::format(
      "evaluation of candidate {} ({}): status {}\n", cand,
      p.cached ? (p.shared ? "another branch evaluated it; served from the result cache, not re-run"
                           : "served from the result cache, not re-run")
               : fmt::format("ran in {:.1f} s", p.elapsed_s),
      to_string(p.status));
  out += fmt::format("correct: {} | {}: {}", r.correct ? "yes" : "NO",
                     before.goal.metric.empty() ? "score" : before.goal.metric,
                     r.score ? num(*r.score) : num(json()));
  if (r.score_ci_low && r.score_ci_high) {
    out += fmt::format(" (within this evaluation: {} to {})", num(*r.score_ci_low),
                       num(*r.score_ci_high));
  }
  if (r.baseline_score) out += fmt::format(" (baseline {})", num(*r.baseline_score));
  if (before.best_score) {
    std::optional<Figure> f = best_figure(before);
    out += fmt::format(" | best before: {} ({})",
                       f ? figure_text(*f, short_num) : num(*before.best_score),
                       before.best_candidate.substr(0, 12));
  }
  out += "\n";
  const int64_t n = before.confirm.settings.n;
  const bool counts = p.status == EvalStatus::kOk && r.correct && !r.has_violations() && r.score;
  if (n > 0 && counts && !before.confirm.candidates.count(p.candidate) &&
      improves(before.goal.direction, *r.score, before.best_score)) {
    out += fmt::format(
        "this draw would be the new best: the candidate is re-measured {} more time(s) on fresh "
        "inputs before it is announced, and the median of those is its figure (the goal block "
        "shows it)\n",
        n);
  }
  if (r.violations.is_array() && !r.violations.empty()) {
    out += "violations (this result never counts as an improvement): " + r.violations.dump() + "\n";
  }
  std::string mt = metrics_text(r.metrics);
  if (!mt.empty()) out += "metrics: " + mt + "\n";
  std::string log = r.log;
  if (log.size() > 1500) log = log.substr(0, 1500) + "\n[log cut]";
  if (!log.empty()) out += "log: " + log;
  return out;
}

namespace {

// Holds a key claimed in the branches' shared results until the outcome is published; released
// unpublished (another branch may then evaluate it) if the evaluation never produced one.
class SharedClaim {
 public:
  SharedClaim(eval::SharedResults* shared, std::string key)
      : shared_(shared), key_(std::move(key)) {}
  ~SharedClaim() {
    if (shared_) shared_->abandon(key_);
  }
  void publish(EvalStatus status, const json& result) {
    if (shared_) shared_->publish(key_, status, result);
    shared_ = nullptr;
  }

 private:
  eval::SharedResults* shared_;
  std::string key_;
};

class EvaluateTool : public Tool {
 public:
  std::string name() const override { return "evaluate"; }
  std::string description() const override {
    return "Run the task's evaluator on the current workspace: correctness on fresh inputs, the "
           "score (the goal metric), rule violations and a short log. Give `strategy`, a few words "
           "on what this candidate tries; it goes into the ledger. A candidate already evaluated "
           "is answered from the result cache.";
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties", {{"strategy", {{"type", "string"}}}}},
            {"additionalProperties", false}};
  }
  // Re-running on resume is free when the result was logged (cache) and correct when it was not.
  bool idempotent() const override { return true; }

  ToolResult run(const json& args, ToolContext& ctx) override {
    ToolResult r;
    const State& s = *ctx.state;
    TaskSpec task = task_of_run(s);
    std::string strategy = args.value("strategy", "");

    // The candidate is what is on disk, read without following links; a candidate that is not
    // one or more regular files is refused before anything is logged, looked up or run.
    std::vector<eval::CandidateFile> files = eval::read_candidate(task, ctx.workspace);
    std::string refusal = eval::candidate_refusal(task, files);
    if (!refusal.empty()) {
      r.ok = false;
      r.output = "evaluate refused: " + refusal;
      return r;
    }
    // Files changed behind the log's back (by `run`) are logged first.
    std::map<std::string, std::string> disk =
        sync_candidate(task, s, files, ctx.put_blob, &r.events);

    std::string candidate = eval::candidate_hash(disk);
    std::string key = eval::cache_key(s.task, candidate, eval::detect_device());
    events::EvalFinished p;
    p.candidate = candidate;
    p.cache_key = key;
    p.strategy = strategy;
    if (std::optional<EvalCacheEntry> hit = eval::cached_result(s, key)) {
      p.cached = true;
      p.status = hit->status;
      p.result = hit->result;
    } else if (std::optional<EvalCacheEntry> shared =
                   ctx.shared_results ? ctx.shared_results->claim(key) : std::nullopt) {
      // Another branch of the run paid for this evaluation (or was paying for it: claim waited).
      p.cached = true;
      p.shared = true;
      p.status = shared->status;
      p.result = shared->result;
    } else {
      SharedClaim claim(ctx.shared_results, key);
      eval::EvalOutcome o;
      if (ctx.executor) {
        eval::EvalRequest req;
        req.task = &task;
        req.task_dir = s.config.value("task_dir", "");
        req.candidate_dir = ctx.workspace;
        req.files = std::move(files);
        req.candidate = candidate;
        req.cache_key = key;
        req.id = ctx.call_key;
        eval::ExecutedEval x = ctx.executor->evaluate(req, ctx.log_now);
        o = std::move(x.outcome);
        p.executor = events::ExecutorRef{ctx.executor->spec().to_string(), x.where, x.node};
      } else {
        o = eval::run_evaluator(task, ctx.workspace);
      }
      p.cached = false;
      p.status = o.status;
      p.result = o.result;
      p.elapsed_s = o.elapsed_s;
      p.gpu_s = task.needs_gpu ? o.elapsed_s : 0.0;
      claim.publish(p.status, p.result);
    }
    r.output = describe_evaluation(p, s);
    r.ok = p.status == EvalStatus::kOk;
    r.events.push_back(make_event(p));
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_evaluate_tool() { return std::make_unique<EvaluateTool>(); }

}  // namespace marathon
