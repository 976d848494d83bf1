#include "goal/task_spec.h"

#include <fnmatch.h>
#include <pwd.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "goal/limits.h"

namespace marathon {

namespace fs = std::filesystem;

TaskError::TaskError(std::string file, std::string key, int line, const std::string& problem)
    : std::runtime_error(file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " +
                         (key.empty() ? std::string() : key + ": ") + problem),
      file_(std::move(file)),
      key_(std::move(key)),
      line_(line) {}

namespace {

int line_of(const toml::node* n) { return n ? static_cast<int>(n->source().begin.line) : 0; }

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

// Reads keys of one TOML table, checking types; remembers which keys were seen so that leftovers
// (typos) are reported.
class TableReader {
 public:
  TableReader(const std::string& file, const std::string& prefix, const toml::table& t,
              int table_line)
      : file_(file), prefix_(prefix), t_(t), table_line_(table_line) {}

  [[noreturn]] void fail(const std::string& key, const toml::node* n,
                         const std::string& problem) const {
    throw TaskError(file_, qualified(key), n ? line_of(n) : table_line_, problem);
  }

  std::string qualified(const std::string& key) const {
    return prefix_.empty() ? key : "[" + prefix_ + "]." + key;
  }

  const toml::node* get(const std::string& key) {
    seen_.insert(key);
    return t_.get(key);
  }

  const toml::node* require(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) fail(key, nullptr, "missing (required)");
    return n;
  }

  std::string string(const std::string& key, bool required, const std::string& dflt = "") {
    const toml::node* n = required ? require(key) : get(key);
    if (!n) return dflt;
    if (!n->is_string()) fail(key, n, "must be a string, got " + type_name(*n));
    return **n->as_string();
  }

  std::string nonblank(const std::string& key) {
    std::string s = string(key, true);
    if (s.find_first_not_of(" \t\r\n") == std::string::npos) {
      fail(key, t_.get(key), "must not be empty");
    }
    return s;
  }

  std::optional<double> number(const std::string& key, bool required) {
    const toml::node* n = required ? require(key) : get(key);
    if (!n) return std::nullopt;
    if (auto i = n->as_integer()) return static_cast<double>(**i);
    if (auto f = n->as_floating_point()) {
      if (!std::isfinite(**f)) fail(key, n, "must be a finite number, got " + std::to_string(**f));
      return **f;
    }
    fail(key, n, "must be a number, got " + type_name(*n));
  }

  bool boolean(const std::string& key, bool dflt) {
    const toml::node* n = get(key);
    if (!n) return dflt;
    if (!n->is_boolean()) fail(key, n, "must be true or false, got " + type_name(*n));
    return **n->as_boolean();
  }

  std::vector<std::string> strings(const std::string& key, bool required) {
    const toml::node* n = required ? require(key) : get(key);
    std::vector<std::string> out;
    if (!n) return out;
    const toml::array* a = n->as_array();
    if (!a) fail(key, n, "must be an array of strings, got " + type_name(*n));
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      if (!e.is_string()) {
        fail(key, &e, "element " + std::to_string(i) + " must be a string, got " + type_name(e));
      }
      out.push_back(**e.as_string());
    }
    if (required && out.empty()) fail(key, n, "must not be empty");
    return out;
  }

  const toml::table* table(const std::string& key, bool required) {
    const toml::node* n = required ? require(key) : get(key);
    if (!n) return nullptr;
    if (!n->is_table()) fail(key, n, "must be a table, got " + type_name(*n));
    return n->as_table();
  }

  void reject_unknown() const {
    for (const auto& [k, v] : t_) {
      std::string key(k.str());
      if (!seen_.count(key)) fail(key, &v, "unknown key (see docs/tasks.md)");
    }
  }

  const std::string& file() const { return file_; }

 private:
  const std::string& file_;
  std::string prefix_;
  const toml::table& t_;
  int table_line_;
  std::set<std::string> seen_;
};

// [a-z0-9][a-z0-9._-]*, checked by a loop: std::regex recurses once per character, so a long
// name would overflow the stack.
bool is_task_name(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) return false;
  }
  return !s.empty();
}

// A relative path that stays inside its folder: not absolute, no "..", not empty.
bool is_contained_relative(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  for (const auto& part : fs::path(p)) {
    if (part == "..") return false;
  }
  return true;
}

json toml_to_json(const toml::node& n) {
  if (auto t = n.as_table()) {
    json o = json::object();
    for (const auto& [k, v] : *t) o[std::string(k.str())] = toml_to_json(v);
    return o;
  }
  if (auto a = n.as_array()) {
    json arr = json::array();
    for (const auto& e : *a) arr.push_back(toml_to_json(e));
    return arr;
  }
  if (auto s = n.as_string()) return **s;
  if (auto i = n.as_integer()) return **i;
  if (auto f = n.as_floating_point()) return **f;
  if (auto b = n.as_boolean()) return **b;
  std::ostringstream os;  // dates and times: their TOML text
  if (auto d = n.as_date()) os << **d;
  if (auto t = n.as_time()) os << **t;
  if (auto dt = n.as_date_time()) os << **dt;
  return os.str();
}

void read_files(TableReader& top, TaskSpec& spec, const fs::path& dir) {
  const toml::table* t = top.table("files", true);
  TableReader r(top.file(), "files", *t, line_of(t));
  spec.starter_dir = r.string("starter_dir", false, "starter");
  if (!is_contained_relative(spec.starter_dir)) {
    r.fail("starter_dir", r.get("starter_dir"), "must be a relative path inside the task folder");
  }
  spec.starter = r.strings("starter", true);
  spec.editable = r.strings("editable", true);
  spec.writable = r.strings("writable", false);
  r.reject_unknown();
  for (const auto& s : spec.starter) {
    if (!is_contained_relative(s)) {
      r.fail("starter", r.get("starter"), "\"" + s + "\" must be a relative path without \"..\"");
    }
  }
  if (dir.empty()) return;
  fs::path sd = dir / spec.starter_dir;
  std::error_code ec;
  if (!fs::is_directory(sd, ec)) {
    r.fail("starter_dir", r.get("starter_dir"), "folder " + sd.string() + " does not exist");
  }
  for (const auto& s : spec.starter) {
    if (!fs::is_regular_file(sd / s, ec)) {
      r.fail("starter", r.get("starter"),
             "starter file \"" + s + "\" not found at " + (sd / s).string());
    }
  }
}

void read_goal(TableReader& top, TaskSpec& spec) {
  const toml::table* t = top.table("goal", true);
  TableReader r(top.file(), "goal", *t, line_of(t));
  spec.goal.metric = r.nonblank("metric");
  std::string direction = r.string("direction", true);
  std::optional<Direction> d = parse_direction(direction);
  if (!d) {
    r.fail("direction", r.get("direction"),
           "must be \"max\" or \"min\", got \"" + direction + "\"");
  }
  spec.goal.direction = *d;
  spec.goal.target = r.number("target", false);
  if (spec.goal.target) {
    if (auto why = target_problem(*spec.goal.target)) r.fail("target", r.get("target"), *why);
  }
  spec.finish_needs_correct_evaluation = r.boolean("finish_needs_correct_evaluation", true);
  auto count = [&](const char* key, int64_t dflt, int64_t max) {
    std::optional<double> v = r.number(key, false);
    if (!v) return dflt;
    if (*v != std::floor(*v) || *v < 0 || *v > static_cast<double>(max)) {
      r.fail(key, r.get(key), "must be a whole number from 0 to " + std::to_string(max));
    }
    return static_cast<int64_t>(*v);
  };
  spec.goal.confirm = count("confirm", spec.goal.confirm, 100);
  spec.goal.confirm_top = count("confirm_top", spec.goal.confirm_top, 100);
  if (std::optional<double> share = r.number("confirm_share", false)) {
    if (!(*share > 0 && *share <= 1)) {
      r.fail("confirm_share", r.get("confirm_share"), "must be a number in (0, 1]");
    }
    spec.goal.confirm_share = *share;
  }
  r.reject_unknown();
}

fs::path read_folder(const fs::path& dir, const std::string& f) {
  fs::path p = (fs::path(f).is_absolute() ? fs::path(f) : dir / f).lexically_normal();
  return p.filename().empty() ? p.parent_path() : p;  // "dir/" names dir
}

// Why a folder of `[evaluator] reads` must not be bound into the evaluator's sandbox (where the
// candidate's code reads whatever the evaluator can): the root folder, the home folder or a folder
// holding it, or a folder holding the task itself. Links resolved; nullopt when none of these.
std::optional<std::string> reads_problem(const fs::path& task_dir, const fs::path& folder) {
  std::error_code ec;
  const fs::path real = fs::canonical(folder, ec);
  if (ec) return std::nullopt;
  auto holds = [&](const fs::path& inner) {
    return std::mismatch(real.begin(), real.end(), inner.begin(), inner.end()).first == real.end();
  };
  if (real == real.root_path()) return std::string("is the root folder");
  std::vector<std::string> homes;
  if (const char* h = std::getenv("HOME")) homes.push_back(h);
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) homes.push_back(pw->pw_dir);
  for (const std::string& h : homes) {
    fs::path home = h.empty() ? fs::path() : fs::canonical(h, ec);
    if (!ec && !home.empty() && home != home.root_path() && holds(home)) {
      return "holds the home folder " + home.string();
    }
  }
  const fs::path task = fs::canonical(task_dir, ec);
  if (!ec && holds(task)) return "holds the task folder " + task.string();
  return std::nullopt;
}

void read_evaluator(TableReader& top, TaskSpec& spec, const fs::path& dir) {
  const toml::table* t = top.table("evaluator", true);
  TableReader r(top.file(), "evaluator", *t, line_of(t));
  const toml::node* cmd = r.require("command");
  if (cmd->is_string()) {
    spec.evaluator.shell = **cmd->as_string();
    if (spec.evaluator.shell.find_first_not_of(" \t") == std::string::npos) {
      r.fail("command", cmd, "must not be empty");
    }
  } else if (cmd->is_array()) {
    spec.evaluator.argv = r.strings("command", true);
  } else {
    r.fail("command", cmd, "must be an array of strings or a string, got " + type_name(*cmd));
  }
  spec.evaluator.timeout_s = *r.number("timeout_s", true);
  if (auto why = timeout_problem(spec.evaluator.timeout_s)) {
    r.fail("timeout_s", r.get("timeout_s"), *why + " (seconds)");
  }
  const toml::node* v = r.require("version");
  if (auto i = v->as_integer()) {
    spec.evaluator.version = std::to_string(**i);
  } else {
    spec.evaluator.version = r.nonblank("version");
  }
  spec.evaluator.reads = r.strings("reads", false);
  for (const std::string& f : spec.evaluator.reads) {
    if (f.find_first_not_of(" \t") == std::string::npos) {
      r.fail("reads", r.get("reads"), "an element is empty");
    }
    if (dir.empty()) continue;
    fs::path p = read_folder(dir, f);
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      r.fail("reads", r.get("reads"), "\"" + f + "\" is not a folder (" + p.string() + ")");
    }
    if (std::optional<std::string> why = reads_problem(dir, p)) {
      r.fail("reads", r.get("reads"),
             "\"" + f + "\" " + *why +
                 ": the evaluator, and the candidate's code in it, would read "
                 "all of it; name only the folders the evaluator needs");
    }
  }
  r.reject_unknown();
}

void read_limits(TableReader& top, TaskSpec& spec) {
  const toml::table* t = top.table("limits", false);
  if (!t) return;
  TableReader r(top.file(), "limits", *t, line_of(t));
  for (const char* k :
       {"max_tool_calls", "max_wall_s", "max_tokens", "max_cost_usd", "max_gpu_s"}) {
    if (auto v = r.number(k, false)) {
      const toml::node* n = r.get(k);
      if (auto why = limit_problem(k, *v, n->is_integer())) r.fail(k, n, *why);
      spec.limits[k] = *v;
    }
  }
  r.reject_unknown();
}

void read_prices(TableReader& top, TaskSpec& spec) {
  const toml::table* t = top.table("prices", false);
  if (!t) return;
  for (const auto& [k, v] : *t) {
    std::string model(k.str());
    TableReader outer(top.file(), "prices", *t, line_of(t));
    const toml::table* pt = outer.table(model, true);
    TableReader r(top.file(), "prices." + model, *pt, line_of(pt));
    json p = json::object();
    for (const char* f : {"prompt", "completion"}) {
      auto x = r.number(f, true);
      if (auto why = price_problem(*x)) r.fail(f, r.get(f), *why);
      p[f] = *x;
    }
    r.reject_unknown();
    spec.prices[model] = p;
  }
}

}  // namespace

TaskSpec parse_task(const std::string& toml_text, const std::string& file, const fs::path& dir) {
  toml::table root;
  try {
    root = toml::parse(toml_text, file);
  } catch (const toml::parse_error& e) {
    throw TaskError(file, "", static_cast<int>(e.source().begin.line),
                    "TOML syntax error: " + std::string(e.description()));
  }
  TaskSpec spec;
  spec.dir = dir;
  TableReader r(file, "", root, 0);
  spec.name = r.nonblank("name");
  if (!is_task_name(spec.name)) {
    r.fail("name", r.get("name"),
           "must be lower-case letters, digits, '.', '_' or '-', got \"" + spec.name + "\"");
  }
  spec.description = r.nonblank("description");
  spec.needs_gpu = r.boolean("needs_gpu", false);
  read_files(r, spec, dir);
  read_goal(r, spec);
  read_evaluator(r, spec, dir);
  if (const toml::table* rules = r.table("rules", false)) spec.rules = toml_to_json(*rules);
  read_limits(r, spec);
  read_prices(r, spec);
  r.reject_unknown();
  return spec;
}

TaskSpec load_task(const fs::path& dir_in) {
  std::error_code ec;
  fs::path dir = fs::absolute(dir_in, ec).lexically_normal();
  if (!dir.empty() && dir.filename().empty()) dir = dir.parent_path();  // trailing slash
  fs::path file = dir / "task.toml";
  if (!fs::is_directory(dir, ec)) {
    throw TaskError(dir_in.string(), "", 0, "task folder does not exist");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw TaskError(file.string(), "", 0, "cannot read task.toml (missing?)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_task(ss.str(), file.string(), dir);
}

json to_json(const TaskSpec& s) {
  json evaluator = {{"timeout_s", s.evaluator.timeout_s}, {"version", s.evaluator.version}};
  if (!s.evaluator.shell.empty()) {
    evaluator["command"] = s.evaluator.shell;
  } else {
    evaluator["command"] = s.evaluator.argv;
  }
  // Only when set: other tasks' canonical form (and result cache keys) stay as they were.
  if (!s.evaluator.reads.empty()) evaluator["reads"] = s.evaluator.reads;
  json goal = {{"metric", s.goal.metric}, {"direction", to_string(s.goal.direction)}};
  if (s.goal.target) goal["target"] = *s.goal.target;
  // Only when lifted: the default leaves the canonical form (and the result cache keys) as it was.
  if (!s.finish_needs_correct_evaluation) goal["finish_needs_correct_evaluation"] = false;
  const GoalSpec dflt;
  if (s.goal.confirm != dflt.confirm) goal["confirm"] = s.goal.confirm;
  if (s.goal.confirm_share != dflt.confirm_share) goal["confirm_share"] = s.goal.confirm_share;
  if (s.goal.confirm_top != dflt.confirm_top) goal["confirm_top"] = s.goal.confirm_top;
  json files = {{"starter_dir", s.starter_dir}, {"starter", s.starter}, {"editable", s.editable}};
  if (!s.writable.empty()) files["writable"] = s.writable;
  return {{"name", s.name},
          {"description", s.description},
          {"needs_gpu", s.needs_gpu},
          {"files", std::move(files)},
          {"goal", goal},
          {"evaluator", evaluator},
          {"rules", s.rules},
          {"limits", s.limits},
          {"prices", s.prices}};
}

std::string canonical_json(const TaskSpec& spec) { return to_json(spec).dump(); }

bool glob_match(const std::string& pattern, const std::string& path) {
  return fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME) == 0;
}

bool is_editable(const TaskSpec& spec, const std::string& path) {
  for (const auto& g : spec.editable) {
    if (glob_match(g, path)) return true;
  }
  return false;
}

std::vector<fs::path> evaluator_read_folders(const TaskSpec& spec) {
  std::vector<fs::path> out;
  for (const std::string& f : spec.evaluator.reads) out.push_back(read_folder(spec.dir, f));
  return out;
}

std::vector<std::string> evaluator_argv(const TaskSpec& spec, const std::string& python,
                                        const fs::path& candidate_dir) {
  if (!spec.evaluator.shell.empty()) return {"/bin/sh", "-c", spec.evaluator.shell};
  auto subst = [&](std::string s) {
    const std::pair<std::string, std::string> tokens[] = {
        {"{python}", python},
        {"{task_dir}", spec.dir.string()},
        {"{candidate_dir}", candidate_dir.string()}};
    for (const auto& [tok, val] : tokens) {
      for (size_t p = s.find(tok); p != std::string::npos; p = s.find(tok, p + val.size())) {
        s.replace(p, tok.size(), val);
      }
    }
    return s;
  };
  std::vector<std::string> out;
  for (const auto& a : spec.evaluator.argv) out.push_back(subst(a));
  return out;
}

}  // namespace marathon
