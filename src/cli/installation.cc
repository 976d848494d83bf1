#include "cli/installation.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "marathon_version.h"

namespace marathon::cli {

namespace fs = std::filesystem;

namespace {

fs::path own_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p;
}

bool has_harness(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "harness" / "repo_eval.py", ec);
}

Installation find_installation() {
  Installation in;
  fs::path exe = own_executable();
  fs::path prefix = exe.parent_path().parent_path();
  if (!exe.empty() && has_harness(prefix / "share" / "marathon")) {
    in.installed = true;
    in.data_dir = prefix / "share" / "marathon";
    in.docs_dir = prefix / "share" / "doc" / "marathon";
    std::ifstream f(in.data_dir / "python");
    std::string line;
    std::getline(f, line);
    std::error_code ec;
    if (!line.empty() && fs::exists(line, ec)) {
      in.python = line;
    } else if (!line.empty()) {
      spdlog::debug("the recorded Python {} is gone; using python3", line);
    }
  } else if (has_harness(MARATHON_SOURCE_DIR)) {
    in.data_dir = MARATHON_SOURCE_DIR;
    in.docs_dir = fs::path(MARATHON_SOURCE_DIR) / "docs";
  }
  return in;
}

}  // namespace

const Installation& installation() {
  static const Installation in = find_installation();
  return in;
}

fs::path resolve_task_dir(const std::string& arg) {
  std::error_code ec;
  fs::path p(arg);
  if (fs::exists(p, ec)) return p;
  const Installation& in = installation();
  bool plain_name = !arg.empty() && arg.find('/') == std::string::npos && arg != "." && arg != "..";
  if (plain_name && !in.data_dir.empty() &&
      fs::is_regular_file(in.data_dir / "tasks" / arg / "task.toml", ec)) {
    return in.data_dir / "tasks" / arg;
  }
  return p;
}

void adopt_installed_python() {
  const char* set = std::getenv("MARATHON_PYTHON");
  if (set && *set) return;
  const Installation& in = installation();
  if (!in.python.empty()) ::setenv("MARATHON_PYTHON", in.python.c_str(), 1);
}

std::string version_text() {
  return std::string("marathon ") + MARATHON_VERSION + " (commit " + MARATHON_COMMIT + ")";
}

}  // namespace marathon::cli
