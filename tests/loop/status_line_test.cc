// The live progress of `marathon run`: on a terminal one status line redrawn in place, in a pipe
// plain lines (what a log file or CI shows).
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "loop/progress.h"
#include "loop_test_support.h"
#include "tiny_script.h"

namespace marathon {
namespace {

using testing::read_text;
using testing::run_binary;
using testing::TempDir;

// Runs the binary on a pseudo-terminal; returns everything it wrote there.
std::string run_on_a_terminal(const std::vector<std::string>& args, double timeout_s) {
  int master = -1;
  winsize ws{};
  ws.ws_col = 160;
  ws.ws_row = 40;
  pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  if (pid == 0) {
    ::setenv("TERM", "xterm", 1);
    std::vector<char*> argv{const_cast<char*>(MARATHON_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::read(master, buf, sizeof buf);  // EIO once the child has closed the terminal
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::close(master);
  return out;
}

std::vector<std::string> without_quiet(std::vector<std::string> args) {
  args.erase(std::remove(args.begin(), args.end(), "--quiet"), args.end());
  return args;
}

TEST(StatusLine, ATerminalGetsOneLineRedrawnInPlace) {
  TempDir dir("status-line");
  auto server = tiny_server();
  std::string out =
      run_on_a_terminal(without_quiet(tiny_run_args(dir / "run", server.base_url())), 120);
  EXPECT_NE(out.find("\r\033[K[tool calls "), std::string::npos) << out;
  EXPECT_NE(out.find("best value 5"), std::string::npos) << out;
  EXPECT_NE(out.find("== run finished"), std::string::npos) << out;
  EXPECT_EQ(out.find("write_file ok"), std::string::npos) << "no line per tool call: " << out;
  EXPECT_NE(out.find("eval #"), std::string::npos) << "evaluations still get their line";
}

// A warning logged while the status line is drawn (a retried model call) is printed above it:
// the line is erased first, so the warning starts a line of its own, and drawn again after.
TEST(StatusLine, AWarningIsPrintedAboveTheLineNotThroughIt) {
  TempDir dir("status-line");
  ScriptedLlmServer server([](size_t i, const json& request) {
    if (i == 1) {
      ScriptedResponse busy;
      busy.status = 503;
      busy.headers["retry-after"] = "0";
      busy.body = {{"error", {{"message", "busy"}}}};
      return busy;
    }
    return tiny_script(ScriptedLlmServer::assistant_turns(request));
  });
  std::string out =
      run_on_a_terminal(without_quiet(tiny_run_args(dir / "run", server.base_url())), 120);
  size_t warn = out.find("retry 1/");
  ASSERT_NE(warn, std::string::npos) << out;
  size_t line_start = out.rfind('\n', warn);
  size_t erased = out.rfind("\r\033[K", warn);
  ASSERT_NE(erased, std::string::npos) << out;
  // Between the erasure and the warning's line nothing but the log's own prefix.
  EXPECT_TRUE(line_start == std::string::npos || erased > line_start) << out;
  EXPECT_EQ(out.substr(erased, warn - erased).find("[tool calls"), std::string::npos) << out;
  // The status line comes back after the warning.
  EXPECT_NE(out.find("\r\033[K[tool calls ", warn), std::string::npos) << out;
  EXPECT_NE(out.find("== run finished"), std::string::npos) << out;
}

TEST(StatusLine, APipeGetsPlainLines) {
  TempDir dir("status-line");
  auto server = tiny_server();
  ASSERT_EQ(
      run_binary(without_quiet(tiny_run_args(dir / "run", server.base_url())), {}, dir / "out"), 0);
  std::string out = read_text(dir / "out");
  EXPECT_EQ(out.find("\033[K"), std::string::npos) << out;
  EXPECT_NE(out.find("write_file"), std::string::npos) << out;
  EXPECT_NE(out.find("eval #"), std::string::npos) << out;
}

TEST(StatusLine, TextHasCallsBestElapsedSpendAndAction) {
  StatusFigures f;
  f.tool_calls = 12;
  f.max_tool_calls = 1000;
  f.best = 1.84;
  f.metric = "speedup";
  f.cost_usd = 0.4249;
  EXPECT_EQ(status_text(f, 192, "running evaluate"),
            "[tool calls 12/1000] best speedup 1.84 | 3m12s | $0.42 | running evaluate");
  f.best.reset();
  EXPECT_EQ(status_text(f, 7322, "waiting for the model"),
            "[tool calls 12/1000] best: none yet | 2h02m | $0.42 | waiting for the model");
}

TEST(StatusLine, TheSearchPolicyIsNotSaidToWaitForAModel) {
  Event e;
  e.type = events::ModelRequest::kType;
  State s;
  s.config["policy"] = "search";
  EXPECT_EQ(action_after(e, s), "choosing the next candidate");
  s.config["policy"] = "llm";
  EXPECT_EQ(action_after(e, s), "waiting for the model");
}

}  // namespace
}  // namespace marathon
