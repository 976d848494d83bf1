// Where this marathon finds what it ships besides the binary: the harness (the generic evaluator
// `marathon init` copies), the bundled tasks, the docs, and the Python environment `make`
// prepared. Installed (`make install`, `cmake --install --prefix P`): P/bin/marathon beside
// P/share/marathon/{harness,tasks,python} and P/share/doc/marathon. In a build tree: the source
// checkout the binary was built from. docs/operations.md, "Installing".
#pragma once

#include <filesystem>
#include <string>

namespace marathon::cli {

struct Installation {
  bool installed = false;          // found beside an installed binary
  std::filesystem::path data_dir;  // holds harness/ and tasks/; empty when none was found
  std::filesystem::path docs_dir;  // the docs (installed: P/share/doc/marathon)
  std::string python;              // recorded at install time; "" when none (or gone)
};

// Found once per process from /proc/self/exe.
const Installation& installation();

// A TASK_DIR argument as a folder: the path itself when it exists, else the bundled task of that
// name (`marathon run cpu-matmul` from any directory), else the path unchanged (loading it then
// says what is missing).
std::filesystem::path resolve_task_dir(const std::string& arg);

// Sets MARATHON_PYTHON to the installation's recorded interpreter when it is unset, so that every
// evaluator and sandbox of this process uses the environment `make` prepared.
void adopt_installed_python();

// "marathon 0.1.0 (commit 0123456789ab)", the text of --version.
std::string version_text();

}  // namespace marathon::cli
