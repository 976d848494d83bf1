#include "taskgen/task_draft.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "goal/limits.h"
#include "goal/task_spec.h"

namespace marathon::taskgen {

namespace {

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string folder_glob(const std::string& folder) {
  return folder.empty() ? "*" : literal_glob(folder) + "/*";
}

// The words of a shell command, split at blanks, quotes and operators (a rough tokenizer: good
// enough to see which paths a command names).
std::vector<std::string> words(const std::string& command) {
  std::vector<std::string> out;
  std::string w;
  for (char c : command) {
    if (std::string_view(" \t\r\n'\"`;|&()<>=,$").find(c) != std::string_view::npos) {
      if (!w.empty()) out.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

// A path as a command names it, made relative to the repository: "./a/b/" -> "a/b".
std::string repo_relative(std::string w) {
  while (w.rfind("./", 0) == 0) w.erase(0, 2);
  while (!w.empty() && w.back() == '/') w.pop_back();
  return w;
}

// Files a tool reads as its configuration when a command starts it.
const std::vector<std::string>& build_files_of(const std::string& tool) {
  static const std::vector<std::string> none;
  static const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
      {"make", {"Makefile", "makefile", "GNUmakefile"}},
      {"cmake", {"CMakeLists.txt", "CMakePresets.json"}},
      {"ctest", {"CMakeLists.txt", "CMakePresets.json"}},
      {"npm", {"package.json"}},
      {"npx", {"package.json"}},
      {"yarn", {"package.json"}},
      {"pnpm", {"package.json"}},
      {"cargo", {"Cargo.toml", "build.rs"}},
      {"go", {"go.mod"}},
      {"just", {"justfile", "Justfile"}},
      {"tox", {"tox.ini"}},
      {"nox", {"noxfile.py"}},
      {"pytest", {"pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", "conftest.py"}},
  };
  for (const auto& [name, files] : table) {
    if (tool == name) return files;
  }
  return none;
}

bool test_folder(const std::string& name) {
  static const std::set<std::string> names = {"test",      "tests",    "spec",   "specs",
                                              "__tests__", "testdata", "testing"};
  return names.count(name) > 0;
}

// `text` with each paragraph's lines broken at spaces to at most `width` characters.
std::string wrapped(const std::string& text, size_t width) {
  std::string out;
  size_t col = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '\n') {
      out += '\n';
      col = 0;
      ++i;
      continue;
    }
    size_t end = text.find_first_of(" \n", i);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(i, end - i);
    if (col > 0 && col + 1 + word.size() > width) {
      out += '\n';
      col = 0;
    } else if (col > 0) {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
    i = end < text.size() && text[end] == ' ' ? end + 1 : end;
  }
  return out;
}

bool test_file(const std::string& base) {
  for (const char* g :
       {"test_*", "*_test.*", "*_tests.*", "*.test.*", "*_spec.*", "*.spec.*", "conftest.py"}) {
    if (glob_match(g, base)) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> request_problem(const InitRequest& r) {
  if (blank(r.task_dir)) return "TASK_DIR: the folder to create is missing";
  if (blank(r.repo)) return "--repo: the repository is missing";
  if (blank(r.metric) && blank(r.metric_time)) {
    return "--metric: the command that prints the number is missing (or --metric-time: the "
           "command the evaluator times)";
  }
  if (!blank(r.metric) && !blank(r.metric_time)) {
    return "--metric-time: give either --metric (a command printing the number) or "
           "--metric-time (a command the evaluator times), not both";
  }
  if (!blank(r.metric_time) && r.direction != "min") {
    return fmt::format("--direction: the time --metric-time measures is minimised, not \"{}\"",
                       r.direction);
  }
  if (!parse_direction(r.direction)) {
    return fmt::format("--direction: must be min or max, got \"{}\"", r.direction);
  }
  if (r.runs < 1 || r.runs > kMaxRuns) {
    return fmt::format("--runs: must be between 1 and {}, got {}", kMaxRuns, r.runs);
  }
  if (r.timeout_s != 0) {
    if (auto why = timeout_problem(r.timeout_s)) return "--timeout: " + *why + " (seconds)";
  }
  if (!r.name.empty() && task_name_for(r.name) != r.name) {
    return fmt::format(
        "--name: \"{}\" is not a task name (lower-case letters, digits, '.', '_', '-', starting "
        "with a letter or digit)",
        r.name);
  }
  if (blank(r.metric_name)) return "--metric-name: must not be blank";
  for (const auto& g : r.editable) {
    if (blank(g)) return "--editable: a glob is empty";
  }
  for (const auto& g : r.protect) {
    if (blank(g)) return "--protect: a glob is empty";
  }
  return std::nullopt;
}

std::string task_name_for(const std::string& folder_name) {
  std::string out;
  for (char c : folder_name) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '.' || l == '_' || l == '-';
    if (!ok) l = '-';
    if (out.empty() && !((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9'))) continue;
    out += l;
  }
  return out;
}

std::string literal_glob(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::vector<std::string> folder_globs(const std::vector<std::string>& files) {
  std::set<std::string> folders;
  for (const auto& f : files) folders.insert(folder_of(f));
  std::vector<std::string> out;
  for (const auto& d : folders) out.push_back(folder_glob(d));
  return out;
}

std::vector<std::string> inferred_protected(const std::vector<std::string>& files,
                                            const std::string& metric, const std::string& check) {
  std::set<std::string> file_set(files.begin(), files.end());
  std::set<std::string> folders;  // folder globs
  std::set<std::string> singles;  // files, protected one by one unless a folder glob has them
  auto protect_folder = [&](const std::string& folder) {
    for (const auto& f : files) {
      if (f.rfind(folder + "/", 0) == 0) folders.insert(folder_glob(folder_of(f)));
    }
  };
  for (const std::string& command : {metric, check}) {
    for (const std::string& w : words(command)) {
      std::string rel = repo_relative(w);
      if (rel.empty()) continue;
      if (file_set.count(rel)) singles.insert(rel);
      protect_folder(rel);
      for (const std::string& b : build_files_of(base_of(w))) {
        for (const auto& f : files) {
          if (base_of(f) == b && (b == "conftest.py" || f == b)) singles.insert(f);
        }
      }
    }
  }
  for (const auto& f : files) {
    std::string folder = folder_of(f);
    std::string rest = folder;
    while (!rest.empty()) {
      size_t slash = rest.find('/');
      if (test_folder(rest.substr(0, slash))) {
        folders.insert(folder_glob(folder));
        break;
      }
      rest = slash == std::string::npos ? "" : rest.substr(slash + 1);
    }
    if (test_file(base_of(f))) singles.insert(f);
  }
  std::set<std::string> out(folders.begin(), folders.end());
  for (const auto& f : singles) {
    bool covered = std::any_of(folders.begin(), folders.end(),
                               [&](const std::string& g) { return glob_match(g, f); });
    if (!covered) out.insert(literal_glob(f));
  }
  return {out.begin(), out.end()};
}

const std::vector<std::string>& steering_patterns() {
  static const std::vector<std::string> patterns = {
      // Python: pytest's configuration and plugins, start-up hooks, bytecode, caches
      "conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
      "noxfile.py", "sitecustomize.py", "usercustomize.py", "*.pth", "*.pyc", "*.pyo",
      "__pycache__", ".pytest_cache",
      // JavaScript: npm/yarn settings, test-runner and transpiler configuration
      ".npmrc", ".yarnrc", ".yarnrc.yml", "jest.config.*", "vitest.config.*", ".mocharc.*",
      "babel.config.*", ".babelrc",
      // Go: a test file can hold a TestMain that decides the exit status of `go test`
      "*_test.go",
      // Rust: cargo's configuration (rustflags, a runner wrapping every test binary)
      ".cargo/config", ".cargo/config.toml",
      // make reads GNUmakefile, then makefile, before Makefile
      "GNUmakefile", "makefile"};
  return patterns;
}

std::vector<std::string> named_files(const std::vector<std::string>& files,
                                     const std::string& command) {
  std::set<std::string> file_set(files.begin(), files.end());
  std::set<std::string> out;
  for (const std::string& w : words(command)) {
    std::string rel = repo_relative(w);
    if (!rel.empty() && file_set.count(rel)) out.insert(rel);
  }
  return {out.begin(), out.end()};
}

std::optional<std::string> in_process_timing(
    const std::string& metric, const std::vector<std::pair<std::string, std::string>>& texts) {
  for (const std::string& w : words(metric)) {
    for (const char* tool : {"timeit", "--benchmark-json", "--benchmark-only", "pytest-benchmark",
                             "criterion", "-bench", "-test.bench"}) {
      if (w == tool) return fmt::format("`{}` times the code in the process it runs", w);
    }
  }
  // Clocks a benchmark reads in Python, JavaScript, C++, Go, Rust, Java.
  static const char* clocks[] = {
      "perf_counter",    "time.time(",  "time.monotonic", "process_time",   "timeit",
      "performance.now", "Date.now()",  "process.hrtime", "std::chrono",    "clock_gettime",
      "time.Now()",      "time.Since(", "Instant::now",   "System.nanoTime"};
  for (const auto& [path, text] : texts) {
    for (const char* c : clocks) {
      if (text.find(c) != std::string::npos) {
        return fmt::format("{} reads a clock ({}) in the process that runs the candidate's code",
                           path, c);
      }
    }
  }
  return std::nullopt;
}

std::string canary_folder(const std::vector<std::string>& files, const std::string& check) {
  std::vector<std::string> ws = words(check);
  bool runs_tests = std::any_of(ws.begin(), ws.end(), [](const std::string& w) {
    return base_of(w) == "pytest" || base_of(w) == "py.test" || w == "unittest";
  });
  if (!runs_tests) return "";
  for (const std::string& w : ws) {
    std::string rel = repo_relative(w);
    if (rel.empty() || rel.find("..") != std::string::npos) continue;
    for (const auto& f : files) {
      if (f.rfind(rel + "/", 0) == 0 && test_file(base_of(f)) && glob_match("*.py", base_of(f))) {
        return rel;
      }
    }
  }
  return "";
}

std::optional<std::string> unmatched_glob(const std::vector<std::string>& globs,
                                          const std::vector<std::string>& files) {
  for (const auto& g : globs) {
    bool any = std::any_of(files.begin(), files.end(),
                           [&](const std::string& f) { return glob_match(g, f); });
    if (!any) return g;
  }
  return std::nullopt;
}

std::vector<std::string> globs_matching(const std::vector<std::string>& globs,
                                        const std::vector<std::string>& files) {
  std::vector<std::string> out;
  for (const auto& g : globs) {
    if (!unmatched_glob({g}, files)) out.push_back(g);
  }
  return out;
}

std::string default_description(const TaskDraft& d) {
  std::string s;
  if (d.wall_time) {
    s = fmt::format(
        "Make `{}` take as little time as possible. The workspace holds the repository ({} "
        "files); the command runs in a clean copy of it with your editable files put in, and the "
        "evaluator times it from outside: the seconds it takes are the score ({}; the median of "
        "{} run{} is kept).",
        d.metric, d.starter.size(), d.metric_name, d.runs, d.runs == 1 ? "" : "s");
    if (d.metric_output) {
      s += " Its output must stay what the committed code prints: a candidate printing anything "
           "else is incorrect.";
    }
  } else {
    s = fmt::format(
        "Make the number printed by `{}` as {} as possible. The workspace holds the repository "
        "({} files); the command runs in a clean copy of it with your editable files put in, and "
        "the number on its last line of output is the score ({}; the median of {} run{} is "
        "kept).",
        d.metric, d.direction == Direction::kMin ? "low" : "high", d.starter.size(), d.metric_name,
        d.runs, d.runs == 1 ? "" : "s");
  }
  if (!d.check.empty()) {
    s += fmt::format(
        "\n\n`{}` must still pass (exit status 0): a candidate failing it is incorrect.", d.check);
    if (!d.canary.empty()) {
      s += fmt::format(
          " It is also run with a failing test added to {}/, and must fail: code that changes "
          "how the tests report is a rule violation.",
          d.canary);
    }
  }
  if (!d.integrity.empty()) {
    s += fmt::format("\n`{}` must pass after it (exit status 0), else the candidate is incorrect.",
                     d.integrity);
  }
  s += "\n\nEditable files (globs; `*` does not cross `/`): ";
  for (size_t i = 0; i < d.editable.size(); ++i) s += (i ? ", " : "") + d.editable[i];
  s += ". Changes to other files are ignored: the evaluation uses the committed copy.";
  if (!d.protect.empty()) {
    s += "\nProtected (changing, adding or deleting one is a rule violation): ";
    for (size_t i = 0; i < d.protect.size(); ++i) s += (i ? ", " : "") + d.protect[i];
    s += ".";
  }
  s += "\nFiles that steer test runners and interpreters can never be added, changed or deleted, "
       "anywhere (a rule violation): ";
  for (size_t i = 0; i < steering_patterns().size(); ++i) {
    s += (i ? ", " : "") + steering_patterns()[i];
  }
  s += "; nor can a new top-level module named like a standard library one.";
  s += "\nRun the commands yourself in the workspace (the `run` tool) to see where the number "
       "comes from before changing anything.";
  return wrapped(s, 99);
}

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned>(c));
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string toml_multiline(const std::string& s) {
  std::string out = "\"\"\"\n";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      out += fmt::format("\\u{:04X}", static_cast<unsigned>(c));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"\"\"";
}

namespace {

std::string toml_list(const std::vector<std::string>& items, const std::string& indent) {
  if (items.empty()) return "[]";
  std::string out = "[";
  size_t width = indent.size() + 1;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = toml_string(items[i]) + (i + 1 < items.size() ? "," : "");
    if (i > 0 && width + item.size() + 1 > 100) {
      out += "\n" + indent;
      width = indent.size();
    } else if (i > 0) {
      out += " ";
      ++width;
    }
    out += item;
    width += item.size();
  }
  return out + "]";
}

std::string number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return fmt::format("{}", static_cast<long long>(v));
  }
  // The shortest form that reads back as the same double (0.6137, not 0.61370000000000002);
  // fmt writes nan and inf as TOML spells them.
  return fmt::format("{}", v);
}

}  // namespace

std::string render_task_toml(const TaskDraft& d) {
  std::string s;
  s += "# Written by `marathon init` from " + d.origin + ".\n";
  s += "# The format: docs/tasks.md. evaluate.py is marathon's generic evaluator of repository\n";
  s += "# tasks (harness/repo_eval.py); it reads [files] and [rules] below.\n";
  s += "name = " + toml_string(d.name) + "\n";
  s += "description = " + toml_multiline(d.description) + "\n";
  s += "needs_gpu = false\n\n";
  s += "[files]\n";
  s += fmt::format("starter_dir = {}  # the repository's committed files\n",
                   toml_string(kRepoFolder));
  s += "starter = " + toml_list(d.starter, "           ") + "\n";
  s += "editable = " + toml_list(d.editable, "            ") + "\n\n";
  s += "[goal]\n";
  s += "metric = " + toml_string(d.metric_name) + "\n";
  s += "direction = " + toml_string(to_string(d.direction)) + "\n\n";
  s += "[evaluator]\n";
  s += fmt::format("command = [\"{{python}}\", {}]\n", toml_string(kEvaluatorFile));
  s += "timeout_s = " + number(d.timeout_s) + "\n";
  s += "version = \"1\"\n\n";
  s += "[rules]\n";
  if (d.wall_time) {
    s += "metric = " + toml_string(d.metric) + "  # timed by the evaluator: seconds\n";
    s += "metric_kind = \"wall_time\"\n";
    if (d.metric_output) {
      s += "metric_output = " + toml_string(*d.metric_output) +
           "  # the starter's output; another is incorrect\n";
    }
  } else {
    s += "metric = " + toml_string(d.metric) + "  # its last line of stdout is the number\n";
  }
  if (!d.check.empty()) s += "check = " + toml_string(d.check) + "  # must exit 0\n";
  if (!d.canary.empty()) {
    s += "canary = " + toml_string(d.canary) +
         "  # the check must fail with a failing test added here\n";
  }
  if (!d.integrity.empty()) {
    s += "integrity = " + toml_string(d.integrity) + "  # --guard: must exit 0 after the check\n";
  }
  s += "runs = " + std::to_string(d.runs) +
       "  # metric runs per evaluation; the median is the score\n";
  s += "protected = " + toml_list(d.protect, "             ") +
       "  # editable files that must stay as committed\n";
  if (d.baseline) s += "baseline = " + number(*d.baseline) + "  # the starter's score at init\n";
  return s;
}

double timeout_for(double elapsed_s) {
  double t = std::ceil((5 * std::max(0.0, elapsed_s) + 60) / 10) * 10;
  return std::min(t, kMaxEvaluatorTimeoutS);
}

}  // namespace marathon::taskgen
