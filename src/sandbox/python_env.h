// The Python environment a sandbox needs to run an interpreter: the interpreter's own executable
// and the folders it imports from (its prefix, the base installation a venv points to, and any
// further sys.path folder), found by asking the interpreter itself once per process.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace marathon::sandbox {

struct PythonEnv {
  std::string executable;                   // sys.executable: a path, symlinks kept
  std::vector<std::filesystem::path> dirs;  // bind read-only: prefix, base_prefix, sys.path
  std::string error;                        // non-empty: the interpreter could not be asked
};

// Pure: the environment from the interpreter's answer to kPythonQuery (a JSON object with
// executable, prefix, base_prefix, path). Sets error when the text is not such an object.
PythonEnv parse_python_query(const std::string& text);

// Asks `python` (a path, or a name looked up on PATH, e.g. a pyenv shim) in isolated mode (-I: no
// environment variables, no user site, not the current folder), outside the sandbox with the
// runner's environment less its secrets. Remembered per name for the life of the process.
const PythonEnv& python_env(const std::string& python);

}  // namespace marathon::sandbox
