// marathon eval TASK_DIR [--candidate DIR] [--json]: runs a task's evaluator once, outside any run.
// Exit status: 0 when the evaluator produced a verdict (correct or not); 1 when the evaluator
// itself failed (invalid output, non-zero exit, timeout, crash); 2 for a bad task folder, task.toml
// or candidate folder, or when the sandbox cannot be built here (and --unsafe-no-sandbox was not
// given).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/installation.h"
#include "core/eval_result.h"
#include "core/terminal_text.h"
#include "eval/evaluator.h"
#include "eval/result_cache.h"
#include "goal/limits.h"
#include "goal/task_spec.h"

namespace marathon::cli {
namespace {

namespace fs = std::filesystem;

struct EvalCliOptions {
  std::string task_dir;
  std::string candidate;
  bool json = false;
  int64_t seed = -1;
  double timeout_s = 0;
  bool unsafe_no_sandbox = false;
};

std::string human(const TaskSpec& task, const fs::path& cand, const std::string& cand_hash,
                  const eval::EvalOutcome& o) {
  const EvalResult r = read_eval_result(o.result);
  std::string out;
  // Values hold the evaluator's and the candidate's bytes.
  auto line = [&](const std::string& k, const std::string& v) {
    out += fmt::format("{:<11} {}\n", k, terminal_safe(v));
  };
  std::string goal = fmt::format("{} ({})", task.goal.metric, to_string(task.goal.direction));
  if (task.goal.target) goal += fmt::format(", target {:.6g}", *task.goal.target);
  line("task", fmt::format("{}: {}", task.name, goal));
  line("candidate", fmt::format("{} ({})", cand.string(), cand_hash.substr(0, 12)));
  line("outcome", fmt::format("{} in {:.1f} s", eval::to_string(o.status), o.elapsed_s));
  line("correct", r.correct ? "yes" : "no");
  line("score", r.score ? fmt::format("{:.6g} {}", *r.score, task.goal.metric) : "none");
  if (r.baseline_score) line("baseline", fmt::format("{:.6g}", *r.baseline_score));
  const json& v = r.violations;
  if (v.empty()) {
    line("violations", "none");
  } else {
    for (size_t i = 0; i < v.size(); ++i) line(i == 0 ? "violations" : "", v[i].get<std::string>());
  }
  if (!r.metrics.empty()) line("metrics", r.metrics.dump());
  const std::string& log = r.log;
  if (!log.empty()) {
    bool first = true;
    size_t start = 0;
    while (start <= log.size()) {
      size_t nl = log.find('\n', start);
      std::string l = log.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      line(first ? "log" : "", l);
      first = false;
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  return out;
}

void run_eval(const EvalCliOptions& opt) {
  TaskSpec task;
  try {
    task = load_task(resolve_task_dir(opt.task_dir));
  } catch (const TaskError& e) {
    spdlog::error("{}", e.what());
    exit_code = 2;
    return;
  }
  if (!sandbox_gate(opt.unsafe_no_sandbox, "eval").ok) {
    exit_code = 2;
    return;
  }
  fs::path cand = opt.candidate.empty() ? task.starter_path() : fs::path(opt.candidate);
  std::error_code ec;
  if (!fs::is_directory(cand, ec)) {
    spdlog::error("candidate folder {} does not exist", cand.string());
    exit_code = 2;
    return;
  }
  std::string cand_hash;
  try {
    cand_hash = eval::candidate_hash(eval::editable_files(task, cand));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    exit_code = 2;
    return;
  }
  eval::EvalOptions eo;
  if (opt.seed >= 0) eo.seed = static_cast<uint64_t>(opt.seed);
  if (opt.timeout_s != 0) {
    if (auto why = timeout_problem(opt.timeout_s)) {
      spdlog::error("--timeout: {} (seconds)", *why);
      exit_code = 2;
      return;
    }
    eo.timeout_s = opt.timeout_s;
  }
  eval::EvalOutcome o = eval::run_evaluator(task, cand, eo);
  if (opt.json) {
    json out = o.result;
    out["eval_status"] = eval::to_string(o.status);
    out["elapsed_s"] = o.elapsed_s;
    out["candidate"] = cand_hash;
    out["task"] = task.name;
    std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
  } else {
    std::cout << human(task, cand, cand_hash, o);
  }
  exit_code = o.status == eval::EvalStatus::kOk ? 0 : 1;
}

}  // namespace

void register_eval(CLI::App& app) {
  auto opt = std::make_shared<EvalCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Run a task's evaluator once on a candidate folder (default: the task's starter files). "
      "Exit 0 when it gave a verdict, correct or not; 1 when the evaluator failed; 2 for a bad "
      "task or candidate folder.");
  cmd->add_option("TASK_DIR", opt->task_dir, "task folder (with task.toml)")->required();
  cmd->add_option("--candidate", opt->candidate, "candidate folder (default: the starter files)");
  cmd->add_flag("--json", opt->json, "print the result as one JSON object");
  cmd->add_option("--seed", opt->seed, "fix the evaluator's random seed (MARATHON_EVAL_SEED)");
  cmd->add_option("--timeout", opt->timeout_s, "override the task's timeout_s");
  cmd->add_flag("--unsafe-no-sandbox", opt->unsafe_no_sandbox, kUnsafeNoSandboxHelp);
  cmd->callback([opt] { run_eval(*opt); });
}

}  // namespace marathon::cli
