// What a task allows: write_file and edit_file only on the task's editable files and the scratch
// folder; finish only once an evaluation was correct (unless the task lifts it).
#include <gtest/gtest.h>

#include "tools/tool_finish.h"
#include "tools/tool_registry.h"
#include "tools/workspace_tools.h"
#include "tools_test_support.h"

namespace marathon {
namespace {

class TaskLimits : public ::testing::Test {
 protected:
  TaskLimits() {
    for (auto& t : make_workspace_tools()) reg.add(std::move(t));
    reg.add(make_finish_tool());
    state.task = {{"name", "t"},
                  {"files", {{"editable", json::array({"kernel.cc", "src/*.h"})}}},
                  {"goal", {{"metric", "speedup"}, {"direction", "max"}}}};
    w.ctx.state = &state;
  }
  ToolResult call(const std::string& tool, const json& args) {
    return reg.call_json(tool, args, w.ctx);
  }
  testing::TempWorkspace w;
  ToolRegistry reg;
  State state;
};

TEST_F(TaskLimits, WritesOutsideTheEditableGlobsAndScratchAreRefusedNamingBoth) {
  EXPECT_TRUE(call("write_file", {{"path", "kernel.cc"}, {"content", "a"}}).ok);
  EXPECT_TRUE(call("write_file", {{"path", "./src/../src/k.h"}, {"content", "b"}}).ok);
  EXPECT_TRUE(call("write_file", {{"path", "scratch/notes/try1.cc"}, {"content", "c"}}).ok);
  for (const char* path : {"evaluate.py", "src/deep/k.h", "scratch", "harness.cc"}) {
    ToolResult r = call("write_file", {{"path", path}, {"content", "x"}});
    ASSERT_FALSE(r.ok) << path;
    EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("kernel.cc, src/*.h"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("scratch/"), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::is_regular_file(w.ws() / path)) << path;
  }
  w.write("harness.cc", "int x = 1;\n");
  ToolResult edit =
      call("edit_file", {{"path", "harness.cc"}, {"old_string", "1"}, {"new_string", "2"}});
  EXPECT_FALSE(edit.ok);
  EXPECT_NE(edit.output.find("edit_file harness.cc: not an editable file"), std::string::npos)
      << edit.output;
  EXPECT_EQ(w.read(w.ws() / "harness.cc"), "int x = 1;\n");
}

TEST_F(TaskLimits, ATasksWritableGlobsWidenWhatMayBeWritten) {
  EXPECT_FALSE(call("write_file", {{"path", "notes/a.md"}, {"content", "x"}}).ok);
  state.task["files"]["writable"] = json::array({"notes/*.md"});
  EXPECT_TRUE(call("write_file", {{"path", "notes/a.md"}, {"content", "x"}}).ok);
  ToolResult r = call("write_file", {{"path", "notes/a.txt"}, {"content", "x"}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("kernel.cc, src/*.h, notes/*.md"), std::string::npos) << r.output;
}

TEST_F(TaskLimits, FinishIsRefusedUntilAnEvaluationWasCorrect) {
  ToolResult early = call("finish", {{"summary", "done"}});
  EXPECT_FALSE(early.ok);
  EXPECT_FALSE(early.finishes_run);
  EXPECT_TRUE(early.events.empty());
  EXPECT_NE(early.output.find("no evaluation has been correct"), std::string::npos);
  state.evaluations = 2;
  state.best_score = 1.5;
  ToolResult later = call("finish", {{"summary", "done"}});
  EXPECT_TRUE(later.ok);
  EXPECT_TRUE(later.finishes_run);
}

TEST_F(TaskLimits, ATaskCanLetFinishComeFirst) {
  state.task["goal"]["finish_needs_correct_evaluation"] = false;
  EXPECT_TRUE(call("finish", {{"summary", "nothing to do"}}).finishes_run);
}

}  // namespace
}  // namespace marathon
