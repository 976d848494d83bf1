// marathon init TASK_DIR --repo PATH --metric CMD [--direction min|max] [--check CMD] ...
// marathon init --interactive [TASK_DIR]
// Writes a task for a repository (docs/tasks.md, "Your own task in five minutes"): the committed
// files as the starter, task.toml, and a copy of the generic evaluator; then evaluates the
// starter once in the sandbox and records its score as the baseline. Everything is built in a
// hidden folder beside TASK_DIR and renamed into place only once the starter evaluated correctly:
// a failure leaves no TASK_DIR behind. Exit status: 0 written; 2 bad input (a flag, the
// repository, a glob matching nothing, a starter that does not evaluate); 1 anything else.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/installation.h"
#include "eval/evaluator.h"
#include "goal/task_spec.h"
#include "taskgen/repo_snapshot.h"
#include "taskgen/task_draft.h"

namespace marathon::cli {

namespace fs = std::filesystem;
using taskgen::InitError;
using taskgen::InitRequest;
using taskgen::TaskDraft;

namespace {

struct InitArgs {
  InitRequest req;
  bool interactive = false;
  bool no_default_protect = false;
  bool unsafe_no_sandbox = false;
  bool json = false;  // progress on stderr, the result as one JSON object on stdout
};

// The hidden folder a task is built in; removed unless kept.
class BuildDir {
 public:
  explicit BuildDir(const fs::path& target) {
    std::string tmpl =
        (target.parent_path() / ("." + target.filename().string() + ".init-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw InitError(fmt::format("cannot create a folder beside {}: {}", target.string(),
                                  std::strerror(errno)));
    }
    path_ = tmpl;
    // mkdtemp makes it private; the task folder gets the modes any new folder would.
    mode_t mask = ::umask(0);
    ::umask(mask);
    std::error_code ec;
    fs::permissions(path_, static_cast<fs::perms>(0777 & ~mask), ec);
  }
  ~BuildDir() {
    if (!kept_) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  const fs::path& path() const { return path_; }
  void keep() { kept_ = true; }

 private:
  fs::path path_;
  bool kept_ = false;
};

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::string joined(const std::vector<std::string>& v, const std::string& sep = " ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// One question on stdout, one answer line from stdin ("" keeps the default). Throws InitError at
// the end of the input.
std::string ask(const std::string& question, const std::string& fallback) {
  std::cout << question;
  if (!fallback.empty()) std::cout << " [" << fallback << "]";
  std::cout << ": " << std::flush;
  std::string line;
  if (!std::getline(std::cin, line)) {
    std::cout << "\n";
    throw InitError("init --interactive: the input ended before every question was answered");
  }
  size_t b = line.find_first_not_of(" \t\r");
  if (b == std::string::npos) return fallback;
  size_t e = line.find_last_not_of(" \t\r");
  return line.substr(b, e - b + 1);
}

// The questions of --interactive, each defaulting to what the flags said.
void interview(InitRequest& r) {
  std::cout << "marathon init: a task from your repository. Enter keeps the value in brackets.\n";
  r.task_dir = ask("Task folder to create", r.task_dir);
  r.repo = ask("Repository (a git checkout; its committed files are used)",
               r.repo.empty() ? "." : r.repo);
  while ((r.metric = ask("Metric command (the last line it prints is the number)", r.metric))
             .empty()) {
    std::cout << "  a metric command is needed\n";
  }
  while (true) {
    r.direction = ask("Is lower or higher better? (min/max)", r.direction);
    if (parse_direction(r.direction)) break;
    std::cout << "  answer min or max\n";
  }
  std::string check =
      ask("Check command that must pass (\"-\": none)", r.check.empty() ? "-" : r.check);
  r.check = check == "-" ? "" : check;
  std::string editable =
      ask("Editable files (globs separated by spaces; \"-\": every committed file)",
          r.editable.empty() ? "-" : joined(r.editable));
  r.editable = editable == "-" ? std::vector<std::string>{} : split_words(editable);
  std::string protect = ask("Protected files besides those marathon finds (globs; \"-\": none)",
                            r.protect.empty() ? "-" : joined(r.protect));
  r.protect = protect == "-" ? std::vector<std::string>{} : split_words(protect);
  while (true) {
    std::string runs =
        ask("Metric runs per evaluation (the median is the score)", std::to_string(r.runs));
    char* end = nullptr;
    long n = std::strtol(runs.c_str(), &end, 10);
    if (end && *end == '\0' && n >= 1 && n <= taskgen::kMaxRuns) {
      r.runs = static_cast<int>(n);
      break;
    }
    std::cout << fmt::format("  a number from 1 to {}\n", taskgen::kMaxRuns);
  }
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string score_text(double v) { return fmt::format("{:.6g}", v); }

int do_init(InitArgs a) {
  InitRequest& r = a.req;
  try {
    if (a.interactive) interview(r);
  } catch (const InitError& e) {
    spdlog::error("{}", e.what());
    return 2;
  }
  if (auto why = taskgen::request_problem(r)) {
    spdlog::error("init: {}", *why);
    return 2;
  }
  const bool timed = !r.metric_time.empty();  // the evaluator times the command
  const std::string metric = timed ? r.metric_time : r.metric;
  std::error_code ec;
  const fs::path target = fs::absolute(r.task_dir, ec).lexically_normal();
  if (fs::exists(fs::symlink_status(target, ec))) {
    spdlog::error("init: {} already exists; marathon init writes a new folder", r.task_dir);
    return 2;
  }
  // Parent folders are made as `mkdir -p` would (the task folder itself must be new).
  if (!fs::is_directory(target.parent_path(), ec) &&
      (!fs::create_directories(target.parent_path(), ec) || ec)) {
    spdlog::error("init: cannot create the folder {} (where {} would go): {}",
                  target.parent_path().string(), r.task_dir, ec.message());
    return 2;
  }
  const Installation& inst = installation();
  const fs::path evaluator = inst.data_dir / "harness" / "repo_eval.py";
  if (inst.data_dir.empty() || !fs::is_regular_file(evaluator, ec)) {
    spdlog::error(
        "init: cannot find marathon's harness (harness/repo_eval.py) beside this binary "
        "or in the checkout it was built from; install marathon with `make install`");
    return 1;
  }
  std::string name = r.name.empty() ? taskgen::task_name_for(target.filename().string()) : r.name;
  if (name.empty()) {
    spdlog::error("init: no task name can be made from {}; give --name", r.task_dir);
    return 2;
  }
  if (!sandbox_gate(a.unsafe_no_sandbox, "init").ok) return 2;

  // Asked before the build folder exists: when TASK_DIR is inside the repository, that folder
  // would count as an untracked change.
  std::vector<std::string> uncommitted = taskgen::uncommitted_changes(r.repo);
  try {
    BuildDir build(target);
    std::ostream& say = a.json ? std::cerr : std::cout;
    say << fmt::format("marathon init: snapshotting the committed files of {}\n", r.repo)
        << std::flush;
    taskgen::RepoSnapshot snap =
        taskgen::snapshot_repo(r.repo, build.path() / taskgen::kRepoFolder);

    TaskDraft d;
    d.name = name;
    d.metric_name = r.metric_name;
    d.direction = direction_from_string(r.direction);  // request_problem checked it
    d.metric = metric;
    d.wall_time = timed;
    d.check = r.check;
    d.integrity = r.guard;
    d.canary = taskgen::canary_folder(snap.files, r.check);
    d.runs = r.runs;
    d.starter = snap.files;
    d.origin = fmt::format("{} at commit {}", snap.repo.string(), snap.commit.substr(0, 12));
    d.editable = r.editable.empty() ? taskgen::folder_globs(snap.files) : r.editable;
    const std::string at = fmt::format("the files committed at {} ({})", snap.commit.substr(0, 12),
                                       snap.repo.string());
    if (auto g = taskgen::unmatched_glob(d.editable, snap.files)) {
      throw InitError(fmt::format(
          "--editable '{}' matches none of {}; globs match like fnmatch, `*` does not cross `/` "
          "(e.g. 'src/*.py', 'src/*/*.py')",
          *g, at));
    }
    if (auto g = taskgen::unmatched_glob(r.protect, snap.files)) {
      throw InitError(fmt::format("--protect '{}' matches none of {}", *g, at));
    }
    std::vector<std::string> editable_files;
    for (const auto& f : snap.files) {
      for (const auto& g : d.editable) {
        if (glob_match(g, f)) {
          editable_files.push_back(f);
          break;
        }
      }
    }
    // Protection matters only for editable files: the others are always the committed copy.
    std::vector<std::string> protect;
    if (!a.no_default_protect) {
      protect = taskgen::inferred_protected(snap.files, metric, r.check + " ; " + r.guard);
    }
    protect.insert(protect.end(), r.protect.begin(), r.protect.end());
    std::sort(protect.begin(), protect.end());
    protect.erase(std::unique(protect.begin(), protect.end()), protect.end());
    d.protect = taskgen::globs_matching(protect, editable_files);
    size_t open = 0;
    for (const auto& f : editable_files) {
      bool guarded = !taskgen::globs_matching(d.protect, {f}).empty();
      open += !guarded;
    }
    if (open == 0) {
      throw InitError(
          "every editable file is protected (the files the commands name and the tests are "
          "protected by default): give --editable for the files the agent may change, or "
          "--no-default-protect");
    }
    d.description = r.description.empty() ? taskgen::default_description(d) : r.description;
    d.timeout_s = r.timeout_s != 0 ? r.timeout_s : 1800;

    fs::copy_file(evaluator, build.path() / taskgen::kEvaluatorFile, ec);
    if (ec) throw InitError("cannot copy " + evaluator.string() + ": " + ec.message());
    write_file(build.path() / "task.toml", taskgen::render_task_toml(d));

    TaskSpec task = load_task(build.path());
    if (!timed) {
      std::vector<std::pair<std::string, std::string>> texts;
      for (const auto& f : taskgen::named_files(snap.files, metric)) {
        texts.emplace_back(f, read_text(build.path() / taskgen::kRepoFolder / f));
      }
      if (auto why = taskgen::in_process_timing(metric, texts)) {
        say << fmt::format(
                   "marathon init: warning: the metric looks like a time measured in the process "
                   "that runs the candidate's code ({}): a candidate can fake it (patch the clock, "
                   "print a number and exit). To have the evaluator time it from outside, give "
                   "the command that does the work as --metric-time 'CMD' instead\n",
                   *why)
            << std::flush;
      }
    }
    say << fmt::format("marathon init: evaluating the starter ({} files): {}the metric {} time{}\n",
                       snap.files.size(), d.check.empty() ? "" : "the check, then ", d.runs,
                       d.runs == 1 ? "" : "s")
        << std::flush;
    eval::EvalOptions eo;
    eo.timeout_s = d.timeout_s;
    eval::EvalOutcome o = eval::run_evaluator(task, task.starter_path(), eo);
    const json& res = o.result;
    std::string log = res.value("log", "");
    if (o.status != eval::EvalStatus::kOk) {
      throw InitError(fmt::format("the evaluation of the starter failed ({}): {}",
                                  eval::to_string(o.status), log));
    }
    if (!res.value("correct", false) || !res["score"].is_number()) {
      throw InitError("the starter, as committed, does not evaluate: " + log);
    }
    double baseline = res["score"].get<double>();
    d.baseline = baseline;
    bool output_varies = false;
    if (timed) {
      if (res.contains("metric_output") && res["metric_output"].is_string()) {
        d.metric_output = res["metric_output"].get<std::string>();
      } else {
        output_varies = true;
      }
    }
    if (r.timeout_s == 0) d.timeout_s = taskgen::timeout_for(o.elapsed_s);
    write_file(build.path() / "task.toml", taskgen::render_task_toml(d));
    load_task(build.path());

    fs::rename(build.path(), target, ec);
    if (ec) {
      throw InitError(
          fmt::format("cannot move the task into {}: {}", target.string(), ec.message()));
    }
    build.keep();

    if (a.json) {
      const json& mj = res.value("metrics", json::object());
      json out = {{"task_dir", target.string()},
                  {"name", name},
                  {"origin", d.origin},
                  {"files", snap.files.size()},
                  {"uncommitted_changes", uncommitted.size()},
                  {"skipped", snap.skipped},
                  {"editable", d.editable},
                  {"protected", d.protect},
                  {"refused", taskgen::steering_patterns()},
                  {"metric_kind", timed ? "wall_time" : "stdout"},
                  {"canary", d.canary.empty() ? json(nullptr) : json(d.canary)},
                  {"guard", d.integrity.empty() ? json(nullptr) : json(d.integrity)},
                  {"metric", d.metric},
                  {"direction", to_string(d.direction)},
                  {"runs", d.runs},
                  {"check", d.check.empty() ? json(nullptr) : json(d.check)},
                  {"baseline", baseline},
                  {"baseline_min", mj.contains("min") ? mj["min"] : json(nullptr)},
                  {"baseline_max", mj.contains("max") ? mj["max"] : json(nullptr)},
                  {"evaluation_s", o.elapsed_s},
                  {"timeout_s", d.timeout_s}};
      std::cout << out.dump() << "\n" << std::flush;
      return 0;
    }
    auto line = [](const std::string& k, const std::string& v) {
      std::cout << fmt::format("  {:<11} {}\n", k, v);
    };
    std::cout << fmt::format("marathon init: wrote task {} in {}\n", name, r.task_dir);
    line("repository", d.origin + fmt::format(" ({} files)", snap.files.size()));
    if (!uncommitted.empty()) {
      line("", fmt::format("{} uncommitted change(s) there are not part of the task",
                           uncommitted.size()));
    }
    if (!snap.skipped.empty()) {
      line("", fmt::format("left out (not regular files): {}", joined(snap.skipped, ", ")));
    }
    line("editable", joined(d.editable) + "  (a candidate's changes to other files are ignored)");
    line("protected", (d.protect.empty() ? "none" : joined(d.protect)) +
                          "  (changing, adding or deleting one: a violation)");
    line("refused", "anywhere: " + joined(taskgen::steering_patterns(), ", ") +
                        ", new top-level modules named like the standard library's (they steer "
                        "test runners and interpreters: a violation)");
    if (timed) {
      line("metric",
           fmt::format("`{}` timed by the evaluator (seconds, median of {}){}", d.metric, d.runs,
                       d.metric_output ? "; its output must stay the starter's" : ""));
    } else {
      line("metric",
           fmt::format("`{}` ({}, median of {})", d.metric, to_string(d.direction), d.runs));
    }
    line("check", d.check.empty() ? "none" : "`" + d.check + "`");
    if (!d.canary.empty()) {
      line("canary", fmt::format("the check must fail with a failing test added to {}/", d.canary));
    }
    if (!d.integrity.empty()) line("guard", "`" + d.integrity + "` must exit 0 after the check");
    if (output_varies) {
      line("",
           "warning: the timed command's output differs between runs, so a candidate that "
           "skips the work is not caught; print a result of the work (a checksum), not a time");
    }
    std::string spread;
    const json& m = res.value("metrics", json::object());
    if (d.runs > 1 && m.contains("min") && m.contains("max")) {
      spread = fmt::format(" (runs from {} to {})", score_text(m["min"].get<double>()),
                           score_text(m["max"].get<double>()));
    }
    line("baseline",
         score_text(baseline) + spread +
             fmt::format(", one evaluation {:.1f} s, timeout {} s", o.elapsed_s, d.timeout_s));
    std::cout << fmt::format(
        "next: marathon eval {0}\n      marathon run {0} --model PROVIDER:MODEL   (an LLM "
        "edits the files: {1}/providers.md; this task: {1}/tasks.md)\n",
        r.task_dir, inst.docs_dir.string());
    return 0;
  } catch (const InitError& e) {
    spdlog::error("init: {}", e.what());
    return 2;
  } catch (const TaskError& e) {
    spdlog::error("init: the task written does not load (a bug): {}", e.what());
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("init: {}", e.what());
    return 1;
  }
}

}  // namespace

void register_init(CLI::App& app) {
  auto a = std::make_shared<InitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "init",
      "Write a task for a repository: its committed files, a metric command whose last line is "
      "a number, an optional check command; the starter is evaluated once for its baseline");
  cmd->add_option("TASK_DIR", a->req.task_dir, "The task folder to create (must not exist)");
  cmd->add_option("--repo", a->req.repo, "The git repository (or a folder inside one)");
  cmd->add_option("--metric", a->req.metric,
                  "Shell command run in the repository; the last line it prints is the number");
  cmd->add_option("--metric-time", a->req.metric_time,
                  "Instead of --metric: a shell command the evaluator times from outside (the "
                  "score is its seconds; a candidate's code cannot patch that clock)");
  cmd->add_option("--direction", a->req.direction, "min (default) or max: which way is better");
  cmd->add_option("--check", a->req.check, "Shell command that must exit 0 (e.g. the tests)");
  cmd->add_option("--guard", a->req.guard,
                  "Shell command run after the check that must exit 0: a task's own integrity "
                  "check (its output goes to the log)");
  // One value per occurrence: `--editable 'src/*' TASK_DIR` must not swallow TASK_DIR.
  cmd->add_option("--editable", a->req.editable,
                  "Glob of files the agent may change (repeatable; default: every file)")
      ->allow_extra_args(false);
  cmd->add_option("--protect", a->req.protect,
                  "Glob of editable files that must not change (repeatable; added to the "
                  "files the commands name and the tests)")
      ->allow_extra_args(false);
  cmd->add_flag("--no-default-protect", a->no_default_protect,
                "Protect only the --protect globs, not the files the commands name and the tests");
  cmd->add_option("--runs", a->req.runs, "Metric runs per evaluation; the median is the score");
  cmd->add_option("--name", a->req.name, "Task name (default: from TASK_DIR)");
  cmd->add_option("--metric-name", a->req.metric_name,
                  "What the number is called (default metric)");
  cmd->add_option("--description", a->req.description,
                  "What the agent is asked (default: made up "
                  "from the commands)");
  cmd->add_option("--timeout", a->req.timeout_s,
                  "Seconds one evaluation may take (default: from the starter's)");
  cmd->add_flag("--interactive", a->interactive, "Ask for each of these on the terminal");
  cmd->add_flag("--json", a->json,
                "Progress on stderr; the task written (folder, files, editable, protected, "
                "metric, baseline, timeout) as one JSON object on stdout");
  cmd->add_flag("--unsafe-no-sandbox", a->unsafe_no_sandbox, kUnsafeNoSandboxHelp);
  cmd->footer(
      "Examples:\n"
      "  marathon init ../size-task --repo . --metric 'stat -c %s build/app' "
      "--check 'make test'\n"
      "      smaller build/app, tests still passing (direction min is the default)\n"
      "  marathon init ../speed --repo . --metric 'python3 bench.py' --direction max "
      "--editable 'src/*'\n"
      "      a higher number from bench.py's last line, changing only src/\n"
      "  marathon init ../t --repo . --interactive    asks for each setting\n"
      "Then: marathon run ../size-task --model openai:gpt-4o (docs/tasks.md)");
  cmd->callback([a] { exit_code = do_init(*a); });
}

}  // namespace marathon::cli
