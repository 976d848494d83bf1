#include "taskgen/host_git.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "sandbox/launcher.h"

namespace marathon::taskgen {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Variables git, ssh or tar read a program, a configuration file or a repository from.
bool tool_variable(const std::string& k) {
  static const char* const kNames[] = {"PAGER", "EDITOR",          "VISUAL",         "SSH_ASKPASS",
                                       "LESS",  "LESSOPEN",        "LESSCLOSE",      "TAR_OPTIONS",
                                       "EMAIL", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS"};
  for (const char* n : kNames) {
    if (k == n) return true;
  }
  return starts_with(k, "GIT_");
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

}  // namespace

sandbox::EnvMap host_tool_environment() {
  sandbox::EnvMap env;
  for (const auto& [k, v] : sandbox::host_environment()) {
    if (!tool_variable(k)) env[k] = v;
  }
  env["GIT_CONFIG_NOSYSTEM"] = "1";
  env["GIT_CONFIG_GLOBAL"] = "/dev/null";
  env["GIT_ATTR_NOSYSTEM"] = "1";
  env["GIT_OPTIONAL_LOCKS"] = "0";  // status refreshes no index: no index written, no index hook
  env["GIT_NO_REPLACE_OBJECTS"] = "1";
  env["GIT_TERMINAL_PROMPT"] = "0";
  env["GIT_PAGER"] = "cat";
  env["PAGER"] = "cat";
  env["GIT_EDITOR"] = "false";
  env["GIT_ASKPASS"] = "false";
  env["SSH_ASKPASS"] = "false";
  env["GIT_SSH_COMMAND"] = "false";
  env["GIT_PROTOCOL_FROM_USER"] = "0";
  env["GIT_ALLOW_PROTOCOL"] = "";
  return env;
}

std::vector<std::string> neutral_git_config() {
  return {
      "core.fsmonitor=",           // no fsmonitor hook or daemon
      "core.hooksPath=/dev/null",  // no hook
      "core.pager=cat",
      "core.editor=false",
      "sequence.editor=false",
      "core.askPass=false",
      "core.sshCommand=false",
      "core.gitProxy=",
      "credential.helper=",
      "diff.external=",
      "protocol.allow=never",
      "core.untrackedCache=false",  // no cache written into the repository's index
      "submodule.recurse=false",
      "status.submoduleSummary=false",
      "gc.auto=0",
      "maintenance.auto=false",
  };
}

HostCommand git_command(const GitPlace& place, const std::vector<std::string>& args,
                        const std::vector<std::string>& safe_directories) {
  HostCommand c;
  c.env = host_tool_environment();
  c.cwd = place.cwd;
  c.argv = {"git", "--no-pager"};
  for (const std::string& kv : neutral_git_config()) {
    c.argv.push_back("-c");
    c.argv.push_back(kv);
  }
  for (const std::string& d : safe_directories) {
    c.argv.push_back("-c");
    c.argv.push_back("safe.directory=" + d);
  }
  if (!place.git_dir.empty()) {
    c.env["GIT_DIR"] = place.git_dir.string();
    if (!place.work_tree.empty()) c.env["GIT_WORK_TREE"] = place.work_tree.string();
    if (!place.index_file.empty()) c.env["GIT_INDEX_FILE"] = place.index_file.string();
  }
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  return c;
}

HostCommand tar_command(const std::vector<std::string>& args) {
  HostCommand c;
  c.env = host_tool_environment();
  c.argv = {"tar"};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  return c;
}

std::vector<std::string> operator_safe_directories() {
  std::vector<std::string> out;
  for (const char* scope : {"--system", "--global"}) {
    sandbox::LaunchSpec spec;
    spec.profile = sandbox::Profile::kHostTool;
    spec.isolation = sandbox::Isolation::kNone;
    // This one call reads the operator's own files: the variables naming them stay, nothing else
    // of git's does; `--system`/`--global` read that one file and no repository's.
    spec.env = host_tool_environment();
    spec.env.erase("GIT_CONFIG_NOSYSTEM");
    spec.env.erase("GIT_CONFIG_GLOBAL");
    for (const char* k : {"GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME"}) {
      if (const char* v = std::getenv(k)) spec.env[k] = v;
    }
    spec.cwd = "/";
    spec.argv = {"git", "--no-pager", "config", scope, "--null", "--get-all", "safe.directory"};
    spec.timeout_s = 30;
    sandbox::LaunchResult r = sandbox::launch(spec);
    if (!r.started || r.timed_out || r.exit_code != 0) continue;  // 1: none set
    size_t start = 0;
    while (start < r.out.size()) {
      size_t nul = r.out.find('\0', start);
      if (nul == std::string::npos) break;
      out.push_back(r.out.substr(start, nul - start));
      start = nul + 1;
    }
  }
  return out;
}

CleanGitDir::CleanGitDir(const fs::path& objects, const std::string& commit) {
  const std::string objs = objects.string();
  // One absolute path a line; a quoted line would be read as C-quoted.
  if (!objects.is_absolute() || objs.find('\n') != std::string::npos || objs.front() == '"') {
    throw std::runtime_error("the repository's object folder cannot be named: " + objs);
  }
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  std::string tmpl = (tmp / "marathon-git-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error(
        fmt::format("cannot create a folder in {}: {}", tmp.string(), std::strerror(errno)));
  }
  path_ = tmpl;
  try {
    fs::create_directories(path_ / "objects/info");
    fs::create_directories(path_ / "refs");
    write_text(path_ / "objects/info/alternates", objs + "\n");
    write_text(path_ / "HEAD", commit + "\n");
    // A SHA-256 repository's commit ids are 64 hex digits.
    write_text(path_ / "config",
               commit.size() == 64
                   ? "[core]\n\trepositoryformatversion = 1\n\tbare = false\n[extensions]\n"
                     "\tobjectformat = sha256\n"
                   : "[core]\n\trepositoryformatversion = 0\n\tbare = false\n");
  } catch (...) {
    fs::remove_all(path_, ec);
    throw;
  }
}

CleanGitDir::~CleanGitDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

}  // namespace marathon::taskgen
