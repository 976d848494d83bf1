// The pure part of `marathon init`: flags checked with the flag named, defaults inferred from the
// committed files and the commands, and a task.toml that parses back to what was drafted.
#include "taskgen/task_draft.h"

#include <gtest/gtest.h>

#include "goal/task_spec.h"

namespace marathon::taskgen {
namespace {

InitRequest good_request() {
  InitRequest r;
  r.task_dir = "t";
  r.repo = ".";
  r.metric = "python3 bench.py";
  return r;
}

TEST(InitRequestProblem, EachBadFlagIsNamed) {
  EXPECT_FALSE(request_problem(good_request()));
  auto problem = [](auto change) {
    InitRequest r = good_request();
    change(r);
    return request_problem(r).value_or("");
  };
  EXPECT_NE(problem([](InitRequest& r) { r.direction = "up"; }).find("--direction"),
            std::string::npos);
  EXPECT_NE(problem([](InitRequest& r) { r.runs = 0; }).find("--runs"), std::string::npos);
  EXPECT_NE(problem([](InitRequest& r) { r.runs = kMaxRuns + 1; }).find("--runs"),
            std::string::npos);
  EXPECT_NE(problem([](InitRequest& r) { r.metric = "  "; }).find("--metric"), std::string::npos);
  EXPECT_NE(problem([](InitRequest& r) { r.repo = ""; }).find("--repo"), std::string::npos);
  EXPECT_NE(problem([](InitRequest& r) { r.name = "Has Spaces"; }).find("--name"),
            std::string::npos);
  EXPECT_NE(problem([](InitRequest& r) { r.timeout_s = -1; }).find("--timeout"), std::string::npos);
  EXPECT_NE(problem([](InitRequest& r) { r.editable = {""}; }).find("--editable"),
            std::string::npos);
}

TEST(TaskNameFor, FolderNamesBecomeValidTaskNames) {
  EXPECT_EQ(task_name_for("speed-up"), "speed-up");
  EXPECT_EQ(task_name_for("My Task"), "my-task");
  EXPECT_EQ(task_name_for(".hidden_task"), "hidden_task");
  EXPECT_EQ(task_name_for("---"), "");
  EXPECT_EQ(task_name_for("v2.0"), "v2.0");
}

TEST(FolderGlobs, CoverEveryFileWithOneGlobPerFolder) {
  std::vector<std::string> files = {"a.py", "src/b.py", "src/sub/c.py", "src/d.h"};
  std::vector<std::string> globs = folder_globs(files);
  EXPECT_EQ(globs, (std::vector<std::string>{"*", "src/*", "src/sub/*"}));
  for (const auto& f : files) EXPECT_FALSE(globs_matching(globs, {f}).empty()) << f;
}

TEST(LiteralGlob, MatchesExactlyThePathEvenWithSpecialCharacters) {
  std::string g = literal_glob("data/a[1]*?.txt");
  EXPECT_TRUE(glob_match(g, "data/a[1]*?.txt"));
  EXPECT_FALSE(glob_match(g, "data/a1xy.txt"));
  EXPECT_FALSE(glob_match(g, "data/a[1]zz.txt"));
}

TEST(InferredProtected, FindsWhatTheCommandsNameTheirBuildFilesAndTheTests) {
  std::vector<std::string> files = {"bench.py",        "src/x.py",        "tests/test_x.py",
                                    "tests/unit/t.py", "Makefile",        "pkg/foo_test.go",
                                    "scripts/run.sh",  "web/app.spec.ts", "src/helper.py"};
  std::vector<std::string> p =
      inferred_protected(files, "python3 ./bench.py --n 3 && sh scripts/run.sh", "make check");
  EXPECT_EQ(p,
            (std::vector<std::string>{"Makefile", "bench.py", "pkg/foo_test.go", "scripts/run.sh",
                                      "tests/*", "tests/unit/*", "web/app.spec.ts"}));
}

TEST(InferredProtected, AFolderTheCheckNamesIsProtectedAtEveryDepth) {
  std::vector<std::string> files = {"lib/a.py", "checks/x.py", "checks/deep/y.py", "README"};
  std::vector<std::string> p = inferred_protected(files, "python3 lib/a.py", "sh -c 'ls checks/'");
  EXPECT_EQ(p, (std::vector<std::string>{"checks/*", "checks/deep/*", "lib/a.py"}));
}

TEST(UnmatchedGlob, NamesTheFirstGlobMatchingNoFile) {
  std::vector<std::string> files = {"src/a.rs", "Cargo.toml"};
  EXPECT_FALSE(unmatched_glob({"src/*.rs", "*.toml"}, files));
  EXPECT_EQ(unmatched_glob({"src/*.rs", "*.py", "x"}, files).value_or(""), "*.py");
  EXPECT_EQ(unmatched_glob({"*.rs"}, files).value_or(""), "*.rs") << "`*` does not cross /";
}

TEST(RenderTaskToml, ParsesBackToTheDraftedTask) {
  TaskDraft d;
  d.name = "speed";
  d.metric_name = "ms";
  d.direction = Direction::kMax;
  d.metric = R"x(python3 -c "import sys; print(\"4\")" | tail -n 1)x";
  d.check = "make test 'a b'\tx";
  d.starter = {"a.py", "tests/t.py", "weird \"name\".txt"};
  d.editable = {"*", "tests/*"};
  d.protect = {"tests/*"};
  d.runs = 5;
  d.timeout_s = 130;
  d.baseline = 0.125;
  d.origin = "/r at commit abc";
  d.description = "Line one \"quoted\" \\ back\nline two: café ☕\x01";
  std::string text = render_task_toml(d);
  TaskSpec t = parse_task(text, "task.toml", "");
  EXPECT_EQ(t.name, "speed");
  EXPECT_EQ(t.description, d.description);
  EXPECT_EQ(t.starter_dir, kRepoFolder);
  EXPECT_EQ(t.starter, d.starter);
  EXPECT_EQ(t.editable, d.editable);
  EXPECT_EQ(t.goal.metric, "ms");
  EXPECT_EQ(t.goal.direction, Direction::kMax);
  EXPECT_EQ(t.evaluator.argv, (std::vector<std::string>{"{python}", kEvaluatorFile}));
  EXPECT_EQ(t.evaluator.timeout_s, 130);
  EXPECT_EQ(t.rules["metric"], d.metric);
  EXPECT_EQ(t.rules["check"], d.check);
  EXPECT_EQ(t.rules["runs"], 5);
  EXPECT_EQ(t.rules["protected"], json(d.protect));
  EXPECT_EQ(t.rules["baseline"], 0.125);
}

TEST(RenderTaskToml, NoCheckAndNoBaselineLeaveTheirKeysOut) {
  TaskDraft d;
  d.name = "n";
  d.description = default_description(d);
  d.metric = "echo 1";
  d.starter = {"f"};
  d.editable = {"*"};
  TaskSpec t = parse_task(render_task_toml(d), "task.toml", "");
  EXPECT_FALSE(t.rules.contains("check"));
  EXPECT_FALSE(t.rules.contains("baseline"));
  EXPECT_EQ(t.rules["protected"], json::array());
}

TEST(DefaultDescription, SaysTheCommandsTheDirectionAndWhatMayChange) {
  TaskDraft d;
  d.metric = "sh size.sh";
  d.check = "sh test.sh";
  d.direction = Direction::kMin;
  d.editable = {"src/*"};
  d.protect = {"src/gen.c"};
  std::string s = default_description(d);
  for (char& c : s) c = c == '\n' ? ' ' : c;  // wrapped at 99 columns
  for (const char* part : {"`sh size.sh`", "as low as possible", "`sh test.sh`", "src/*",
                           "src/gen.c", "rule violation"}) {
    EXPECT_NE(s.find(part), std::string::npos) << part << " in " << s;
  }
}

TEST(TimeoutFor, FiveTimesTheStarterPlusAMinuteAtMostADay) {
  EXPECT_EQ(timeout_for(0), 60);
  EXPECT_EQ(timeout_for(3.2), 80);
  EXPECT_EQ(timeout_for(1e9), 86400);
}

}  // namespace
}  // namespace marathon::taskgen
