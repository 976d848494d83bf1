#include "eval/evaluator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/json_reader.h"
#include "core/utf8.h"
#include "sandbox/python_env.h"

namespace marathon::eval {

namespace fs = std::filesystem;

std::string default_python() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string p = env("MARATHON_PYTHON"); !p.empty()) return p;
  // The environment `make` installs (scripts/install-deps), found the way that script finds it.
  std::filesystem::path venv = env("MARATHON_VENV");
  if (venv.empty()) {
    std::filesystem::path cache = env("XDG_CACHE_HOME");
    if (cache.empty() && !env("HOME").empty())
      cache = std::filesystem::path(env("HOME")) / ".cache";
    if (!cache.empty()) venv = cache / "marathon" / "venv";
  }
  if (!venv.empty() && ::access((venv / "bin" / "python").c_str(), X_OK) == 0) {
    return (venv / "bin" / "python").string();
  }
  return "python3";
}

json failed_result(EvalStatus status, const std::string& log) {
  EvalResult r;
  r.log = valid_utf8(log);
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
  // The cut may split a character.
  return "stdout began: " + json(valid_utf8(t)).dump();
}

std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// The object to validate: the whole stdout if it parses as one, else its last non-empty line.
std::optional<json> find_object(const std::string& text) {
  std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  // Bounded (nesting, number range): the output is the candidate's as much as the evaluator's.
  json j = read_outside_json(t).value;
  if (j.is_object()) return j;
  size_t end = t.size();
  size_t start = t.rfind('\n');
  std::string last = trim(start == std::string::npos ? t : t.substr(start + 1, end));
  j = read_outside_json(last).value;
  if (j.is_object()) return j;
  return std::nullopt;
}

}  // namespace

std::optional<json> parse_result(const std::string& stdout_bytes, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<json> {
    if (error) *error = why;
    return std::nullopt;
  };
  // Decoded leniently: a stray byte (a candidate's binary print, a cut-off character) becomes
  // U+FFFD inside a string instead of making the whole result unreadable.
  const std::string stdout_text = valid_utf8(stdout_bytes);
  std::optional<json> found = find_object(stdout_text);
  if (!found) return fail("no JSON object on stdout; " + quote_start(stdout_text));
  json r = *found;
  std::string why = validate_eval_output(r);
  if (!why.empty()) return fail(why);
  return r;
}

EvalOutcome classify(const sandbox::LaunchResult& p, double timeout_s) {
  EvalOutcome o;
  o.elapsed_s = p.elapsed_s;
  o.exit_code = p.exit_code;
  o.signal = p.signal;
  // Both streams are bytes: decoded leniently (after cutting, which may split a character).
  o.stderr_tail = valid_utf8(tail(p.err, 4000));
  const std::string err_note =
      trim(p.err).empty() ? "" : "\nstderr (last lines):\n" + valid_utf8(tail(trim(p.err), 1500));
  if (!p.started) {
    o.status = EvalStatus::kNonzeroExit;
    o.exit_code = 127;
    o.result =
        failed_result(o.status, "the evaluator could not be started: " + valid_utf8(p.setup_error));
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

std::vector<fs::path> evaluator_reads(const std::vector<std::string>& argv,
                                      const fs::path& task_dir) {
  std::vector<fs::path> out;
  const fs::path task = fs::absolute(task_dir).lexically_normal();
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.empty() || a.front() == '-' || (i > 0 && a.find('/') == std::string::npos)) continue;
    fs::path p = fs::path(a).is_absolute() ? fs::path(a) : task / a;
    p = p.lexically_normal();
    std::error_code ec;
    fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) continue;
    fs::path dir = fs::is_directory(st) ? p : p.parent_path();
    auto [m, _] = std::mismatch(task.begin(), task.end(), dir.begin(), dir.end());
    if (m == task.end()) continue;  // inside the task folder
    if (std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
  }
  return out;
}

EvalOutcome run_evaluator(const TaskSpec& task, const fs::path& candidate_dir_in,
                          const EvalOptions& options) {
  std::error_code ec;
  fs::path candidate_dir = fs::absolute(candidate_dir_in, ec).lexically_normal();
  fs::path task_dir = fs::absolute(task.dir, ec).lexically_normal();
  const std::string python = options.python.empty() ? default_python() : options.python;
  // The interpreter as it names itself (a venv's bin/python, not a shim that needs $HOME).
  const sandbox::PythonEnv& py = sandbox::python_env(python);
  const std::string exe = py.error.empty() ? py.executable : python;
  if (!py.error.empty()) spdlog::debug("python {}: {}", python, py.error);
  sandbox::LaunchSpec spec;
  spec.profile = sandbox::Profile::kEvaluate;
  if (options.isolation) spec.isolation = *options.isolation;
  spec.bwrap = options.bwrap;
  spec.argv = evaluator_argv(task, exe, candidate_dir);
  spec.cwd = task_dir;
  spec.readable = {task_dir, candidate_dir};
  for (const fs::path& d : evaluator_reads(spec.argv, task_dir)) spec.readable.push_back(d);
  for (const fs::path& d : evaluator_read_folders(task)) {
    if (std::find(spec.readable.begin(), spec.readable.end(), d) == spec.readable.end()) {
      spec.readable.push_back(d);
    }
  }
  spec.python = python;
  spec.env = {{"MARATHON_CANDIDATE_DIR", candidate_dir.string()},
              {"MARATHON_TASK_DIR", task_dir.string()},
              {"MARATHON_PYTHON", exe}};
  for (const auto& [k, v] : options.env) spec.env[k] = v;
  if (options.seed) spec.env["MARATHON_EVAL_SEED"] = std::to_string(*options.seed);
  spec.timeout_s = options.timeout_s.value_or(task.evaluator.timeout_s);
  spec.out_head = options.stdout_cap;
  spec.out_tail = 0;
  spec.err_head = options.stderr_cap / 2;
  spec.err_tail = options.stderr_cap - spec.err_head;
  spdlog::debug("evaluating {} with {} ({})", candidate_dir.string(), fmt::join(spec.argv, " "),
                sandbox::to_string(spec.isolation));
  sandbox::LaunchResult p = sandbox::launch(spec);
  EvalOutcome o = classify(p, spec.timeout_s);
  spdlog::debug("evaluation: {} in {:.2f} s", to_string(o.status), o.elapsed_s);
  return o;
}

}  // namespace marathon::eval
