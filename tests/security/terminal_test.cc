// A hostile model, a hostile command and a hostile provider write terminal control sequences for
// the operator's terminal: OSC 52 (sets the clipboard), OSC 0 (the window title), CSI 2J (clears
// the screen), the 8-bit CSI (U+009B), a bidirectional override, and line breaks that forge a line
// of marathon's own. They reach `marathon run`'s output through the `run` tool's output preview,
// an unknown tool's name, the finish summary, a model error's warning and the pause it causes,
// and the end-of-run summary. Every one of them must arrive escaped: no ESC, BEL or C1 byte on the
// terminal, no line that starts with the forged text; and the escaped form must be there (the
// bytes were shown, not dropped).
#include <gtest/gtest.h>

#include "hostile_run.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::call;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::TempDir;

// Every control sequence of the attack, and a forged line after a line break.
const std::string kHostile =
    "\x1b]52;c;cHduZWQ=\x07"  // OSC 52: the clipboard
    "\x1b]0;pwned-title\x07"  // OSC 0: the window title
    "\x1b[2J\x1b[H"           // clear the screen, cursor home
    "\xc2\x9b"                // 8-bit CSI
    "1m\xe2\x80\xae"          // U+202E right-to-left override
    "\r\nFORGED marathon: run finished, best score 1e9\n";

// What the operator's terminal must never receive.
void expect_no_control(const std::string& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(out[i]);
    ASSERT_FALSE(c < 0x20 && c != '\n' && c != '\t')
        << "control byte 0x" << std::hex << int(c) << " at " << std::dec << i << ":\n"
        << out.substr(i > 80 ? i - 80 : 0, 160);
  }
  EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos) << "8-bit CSI reached the terminal";
  EXPECT_EQ(out.find("\xe2\x80\xae"), std::string::npos) << "RTL override reached the terminal";
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.rfind("FORGED", 0), 0u) << "a forged line: " << line;
  }
}

TEST(TerminalText, ToolOutputToolNamesAndSummariesReachTheTerminalEscaped) {
  TempDir dir("terminal");
  ScriptedLlmServer server([&](size_t, const json& request) {
    json calls = json::array();
    switch (ScriptedLlmServer::assistant_turns(request)) {
      case 0:  // the `run` tool's output preview
        calls.push_back(
            call("run", {{"command",
                          "printf '\\033]52;c;cHduZWQ=\\007\\033]0;pwned-title\\007\\033[2J"
                          "\\302\\233\\342\\200\\256\\r\\nFORGED marathon: run finished\\n'"}}));
        break;
      case 1:  // an unknown tool whose name is the attack
        calls.push_back(call(kHostile, {{"x", 1}}));
        break;
      default:  // the finish summary
        calls.push_back(call("finish", {{"summary", kHostile}}));
    }
    return testing::openai_tool_calls(calls);
  });
  fs::path run = dir / "run";
  int rc =
      run_binary({"run", testing::hostile_task().string(), "--run-dir", run.string(), "--policy",
                  "llm", "--model", "vllm:scripted", "--base-url", server.base_url()},
                 {}, dir / "run.log");
  const std::string out = read_text(dir / "run.log");
  ASSERT_EQ(rc, 0) << out;
  expect_no_control(out);
  // Shown, escaped: the run's output preview, the tool name, the summary.
  EXPECT_NE(out.find("\\x1b]52;c;cHduZWQ=\\x07"), std::string::npos) << out;
  EXPECT_NE(out.find("\\u009b"), std::string::npos) << out;
  EXPECT_NE(out.find("\\u202e"), std::string::npos) << out;
  EXPECT_NE(out.find("\\x1b[2J"), std::string::npos) << out;
}

TEST(TerminalText, AProviderErrorReachesTheWarningThePauseAndTheSummaryEscaped) {
  TempDir dir("terminal-error");
  ScriptedLlmServer server([&](size_t, const json&) {
    return testing::error_response(403, "denied " + kHostile);  // permanent: the run pauses
  });
  fs::path run = dir / "run";
  int rc =
      run_binary({"run", testing::hostile_task().string(), "--run-dir", run.string(), "--policy",
                  "llm", "--model", "vllm:scripted", "--base-url", server.base_url()},
                 {}, dir / "run.log");
  const std::string out = read_text(dir / "run.log");
  EXPECT_NE(rc, 0) << out;
  expect_no_control(out);
  EXPECT_NE(out.find("model call failed"), std::string::npos) << "no warning: " << out;
  EXPECT_NE(out.find("denied \\x1b]52;c;cHduZWQ=\\x07"), std::string::npos) << out;
  EXPECT_NE(out.find("model_error"), std::string::npos) << out;
}

}  // namespace
}  // namespace marathon
