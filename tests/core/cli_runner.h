// Runs the marathon_core_cli helper binary (the status/log/fork commands) and captures its output.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "test_dir.h"

namespace marathon::testing {

struct CliResult {
  bool exited = false;  // false: killed by a signal (a crash)
  int code = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline CliResult run_cli(const TempDir& scratch, const std::string& args) {
  std::string out = scratch / "cli.out", err = scratch / "cli.err";
  std::string cmd = std::string(CORE_CLI_BINARY) + " " + args + " >" + shell_quote(out) + " 2>" +
                    shell_quote(err);
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exited = WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

}  // namespace marathon::testing
