// A hostile model and a hostile candidate try to take the machine a day-long run lives on: memory
// far past the step's limit (a child of the shell, so that only the whole tree's count catches
// it), and the scratch disk filled past its size. The real binary, with small limits from the
// operator's settings: each step is stopped with a message that says which limit it hit, the
// tool's result (and the evaluation's log) carries it to the model, and the run goes on to finish.
#include <gtest/gtest.h>

#include "hostile_run.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::call;
using testing::events_of_type;
using testing::load_events;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::TempDir;

const char* kHog =
    "python3 -c 'b = bytearray(1200 << 20); b[::4096] = b\"x\" * len(b[::4096]); "
    "import time; time.sleep(60)'; echo survived";

TEST(Limits, MemoryAndScratchHogsAreStoppedWithTheLimitNamedAndTheRunGoesOn) {
  TempDir dir("limits");
  const std::string kernel =
      "import subprocess\n"
      "def main():\n"
      "    subprocess.run(['sh', '-c', " +
      json(kHog).dump() +
      "])\n"
      "    return 'candidate survived'\n";
  ScriptedLlmServer server([&](size_t, const json& request) {
    json calls = json::array();
    switch (ScriptedLlmServer::assistant_turns(request)) {
      case 0:
        calls.push_back(call("run", {{"command", kHog}}));
        break;
      case 1:
        calls.push_back(call("run", {{"command",
                                      "dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>&1; "
                                      "dd if=/dev/zero of=/dev/shm/fill bs=1M count=200 2>&1; "
                                      "exit 1"}}));
        break;
      case 2:
        calls.push_back(call("write_file", {{"path", "kernel.py"}, {"content", kernel}}));
        break;
      case 3:
        calls.push_back(call("evaluate", {{"strategy", "take the memory"}}));
        break;
      default:
        calls.push_back(call("finish", {{"summary", "tried"}}));
    }
    return testing::openai_tool_calls(calls);
  });
  fs::path run = dir / "run";
  const auto t0 = std::chrono::steady_clock::now();
  int rc =
      run_binary({"run", testing::hostile_task().string(), "--run-dir", run.string(), "--policy",
                  "llm", "--model", "vllm:scripted", "--base-url", server.base_url(), "--quiet"},
                 {{"MARATHON_SANDBOX_MEMORY_MIB", "300"}, {"MARATHON_SANDBOX_TMPFS_MIB", "32"}},
                 dir / "run.log");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(rc, 0) << read_text(dir / "run.log");
  EXPECT_LT(took, 60) << "a hog ran to the end of its sleep";

  std::vector<std::string> outputs;
  for (const Event& e : events_of_type(load_events(run), events::ToolFinished::kType)) {
    if (e.payload.value("name", "") == "run") outputs.push_back(e.payload.value("output", ""));
  }
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_NE(outputs[0].find("killed: the step used more than 300 MiB of memory"), std::string::npos)
      << outputs[0];
  EXPECT_EQ(outputs[0].find("survived"), std::string::npos) << outputs[0];
  EXPECT_NE(outputs[1].find("No space left on device"), std::string::npos) << outputs[1];
  EXPECT_NE(outputs[1].find("scratch disk full (limit 32 MiB): /tmp"), std::string::npos)
      << outputs[1];

  std::vector<Event> evals = events_of_type(load_events(run), events::EvalFinished::kType);
  ASSERT_EQ(evals.size(), 1u);
  const std::string eval = evals[0].payload.dump();
  EXPECT_NE(eval.find("killed: the step used more than 300 MiB of memory"), std::string::npos)
      << eval;
  EXPECT_EQ(eval.find("candidate survived"), std::string::npos) << eval;
}

}  // namespace
}  // namespace marathon
