#include "eval/evaluator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

namespace marathon::eval {

namespace fs = std::filesystem;

std::string default_python() {
  const char* p = std::getenv("MARATHON_PYTHON");
  return p && *p ? p : "python3";
}

json failed_result(EvalStatus status, const std::string& log) {
  EvalResult r;
  r.log = log;
  r.error_kind = to_string(status);
  return to_json(r);
}

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string quote_start(const std::string& s, size_t n = 200) {
  std::string t = trim(s);
  if (t.empty()) return "(stdout was empty)";
  if (t.size() > n) t = t.substr(0, n) + "...";
  return "stdout began: " + json(t).dump();
}

std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// The object to validate: the whole stdout if it parses as one, else its last non-empty line.
std::optional<json> find_object(const std::string& text) {
  std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  json j = json::parse(t, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) return j;
  size_t end = t.size();
  size_t start = t.rfind('\n');
  std::string last = trim(start == std::string::npos ? t : t.substr(start + 1, end));
  j = json::parse(last, nullptr, false);
  if (j.is_object()) return j;
  return std::nullopt;
}

}  // namespace

std::optional<json> parse_result(const std::string& stdout_text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<json> {
    if (error) *error = why;
    return std::nullopt;
  };
  std::optional<json> found = find_object(stdout_text);
  if (!found) return fail("no JSON object on stdout; " + quote_start(stdout_text));
  json r = *found;
  std::string why = validate_eval_output(r);
  if (!why.empty()) return fail(why);
  return r;
}

EvalOutcome classify(const ProcessResult& p, double timeout_s) {
  EvalOutcome o;
  o.elapsed_s = p.elapsed_s;
  o.exit_code = p.exit_code;
  o.signal = p.signal;
  o.stderr_tail = tail(p.err, 4000);
  const std::string err_note =
      trim(p.err).empty() ? "" : "\nstderr (last lines):\n" + tail(trim(p.err), 1500);
  if (!p.started) {
    o.status = EvalStatus::kNonzeroExit;
    o.exit_code = 127;
    o.result = failed_result(o.status, "the evaluator could not be started: " + p.spawn_error);
    return o;
  }
  if (p.timed_out) {
    o.status = EvalStatus::kTimeout;
    o.result = failed_result(
        o.status, fmt::format("the evaluator did not finish within {} s; its process group was "
                              "killed",
                              timeout_s) +
                      err_note);
    return o;
  }
  if (p.signal != 0) {
    o.status = EvalStatus::kCrash;
    const char* name = sigabbrev_np(p.signal);
    o.result = failed_result(o.status, fmt::format("the evaluator was killed by signal {} (SIG{})",
                                                   p.signal, name ? name : "?") +
                                           err_note);
    return o;
  }
  if (p.exit_code != 0) {
    o.status = EvalStatus::kNonzeroExit;
    o.result = failed_result(
        o.status, fmt::format("the evaluator exited with status {}", p.exit_code) + err_note);
    return o;
  }
  std::string why;
  std::optional<json> r = parse_result(p.out, &why);
  if (!r) {
    if (p.out_truncated) why += " (stdout was truncated at the capture limit)";
    o.status = EvalStatus::kInvalidOutput;
    o.result = failed_result(o.status, "invalid evaluator output: " + why + err_note);
    return o;
  }
  o.status = EvalStatus::kOk;
  o.result = std::move(*r);
  return o;
}

EvalOutcome run_evaluator(const TaskSpec& task, const fs::path& candidate_dir_in,
                          const EvalOptions& options) {
  std::error_code ec;
  fs::path candidate_dir = fs::absolute(candidate_dir_in, ec).lexically_normal();
  const std::string python = options.python.empty() ? default_python() : options.python;
  ProcessSpec spec;
  spec.argv = evaluator_argv(task, python, candidate_dir);
  spec.cwd = task.dir;
  spec.env = {{"MARATHON_CANDIDATE_DIR", candidate_dir.string()},
              {"MARATHON_TASK_DIR", task.dir.string()},
              {"MARATHON_PYTHON", python}};
  for (const auto& [k, v] : options.env) spec.env[k] = v;
  if (options.seed) spec.env["MARATHON_EVAL_SEED"] = std::to_string(*options.seed);
  spec.timeout_s = options.timeout_s.value_or(task.evaluator.timeout_s);
  spec.stdout_cap = options.stdout_cap;
  spec.stderr_cap = options.stderr_cap;
  spdlog::debug("evaluating {} with {}", candidate_dir.string(), fmt::join(spec.argv, " "));
  ProcessResult p = run_process(spec);
  EvalOutcome o = classify(p, spec.timeout_s);
  spdlog::debug("evaluation: {} in {:.2f} s", to_string(o.status), o.elapsed_s);
  return o;
}

}  // namespace marathon::eval
