// Helpers for the tests of `marathon init` and of an installed marathon: a fresh git repository
// made from a few files, and the binary run from a chosen directory with a chosen standard input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "../loop/loop_test_support.h"

namespace marathon::testing {

// `s` quoted for /bin/sh.
inline std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A git repository at `dir` holding `files` (path -> content; a path ending in .sh is made
// executable), committed once. Fails the test when git fails.
inline void make_repo(const fs::path& dir, const std::map<std::string, std::string>& files) {
  for (const auto& [rel, text] : files) {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::binary) << text;
  }
  std::string cmd = "cd " + sh_quote(dir.string()) +
                    " && git init -q && git add -A && git -c user.name=t -c user.email=t@t "
                    "-c commit.gpgsign=false commit -qm start >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// Runs `binary args...` with `cwd` as the working directory and `input` (a file, "" for
// /dev/null) as standard input; output appended to `log`. Returns the exit status (-1: killed
// after timeout_s).
inline int run_in(const fs::path& cwd, const std::string& binary,
                  const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env, const fs::path& log,
                  const std::string& input = "", double timeout_s = 300) {
  std::string cmd = "cd " + sh_quote(cwd.string()) + " && exec " + sh_quote(binary);
  for (const auto& a : args) cmd += " " + sh_quote(a);
  cmd += " <" + sh_quote(input.empty() ? "/dev/null" : input);
  Child c({"/bin/sh", "-c", cmd}, env, log);
  std::optional<int> rc = c.wait_for(timeout_s);
  if (!rc) {
    c.kill_group();
    return -1;
  }
  return *rc;
}

// The last line of `text` that starts with '{', parsed (a --json result among log lines).
inline json last_json_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  json found;
  while (std::getline(in, line)) {
    if (!line.empty() && line.front() == '{') found = json::parse(line, nullptr, false);
  }
  return found;
}

}  // namespace marathon::testing
