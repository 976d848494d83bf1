// The pure part of `marathon init`: flags checked with the flag named, defaults inferred from the
// committed files and the commands, and a task.toml that parses back to what was drafted.
#include "taskgen/task_draft.h"

#include <gtest/gtest.h>

#include <algorithm>

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

TEST(InitRequestProblem, MetricTimeIsInsteadOfMetricAndAlwaysMinimised) {
  InitRequest r = good_request();
  r.metric_time = "python3 work.py";
  EXPECT_NE(request_problem(r).value_or("").find("not both"), std::string::npos);
  r.metric = "";
  EXPECT_FALSE(request_problem(r));
  r.direction = "max";
  EXPECT_NE(request_problem(r).value_or("").find("--direction"), std::string::npos);
  r = good_request();
  r.metric = "";
  EXPECT_NE(request_problem(r).value_or("").find("--metric-time"), std::string::npos);
}

TEST(InProcessTiming, AScriptReadingAClockIsNamedAndAnOutsideMetricIsNot) {
  auto why = in_process_timing("python3 bench.py", {{"bench.py", "t = time.perf_counter()\n"}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("bench.py reads a clock (perf_counter)"), std::string::npos) << *why;
  EXPECT_TRUE(in_process_timing("python3 -m timeit -s 'import m' 'm.f()'", {}));
  EXPECT_TRUE(in_process_timing("go test -bench . ./...", {}));
  EXPECT_TRUE(in_process_timing("node b.js", {{"b.js", "const t0 = performance.now();"}}));
  EXPECT_FALSE(in_process_timing("stat -c %s build/app", {}));
  EXPECT_FALSE(in_process_timing("python3 count.py", {{"count.py", "print(len(open(f).read()))"}}));
  EXPECT_EQ(named_files({"bench.py", "src/a.py", "tests/t.py"}, "python3 ./bench.py src/a.py x"),
            (std::vector<std::string>{"bench.py", "src/a.py"}));
}

TEST(CanaryFolder, TheTestFolderAPytestOrUnittestCheckRuns) {
  const std::vector<std::string> files = {"lib/a.py", "tests/test_a.py", "docs/x.md"};
  EXPECT_EQ(canary_folder(files, "python3 -m pytest -q tests"), "tests");
  EXPECT_EQ(canary_folder(files, "pytest ./tests/"), "tests");
  EXPECT_EQ(canary_folder(files, "python3 -m unittest discover -s tests -t ."), "tests");
  EXPECT_EQ(canary_folder(files, "python3 -m pytest -q docs"), "") << "no test files there";
  EXPECT_EQ(canary_folder(files, "make test"), "") << "not a runner it knows";
  EXPECT_EQ(canary_folder(files, ""), "");
}

TEST(SteeringPatterns, CoverTheRunnersAndInterpretersConfiguration) {
  const auto& p = steering_patterns();
  for (const char* f : {"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                        "sitecustomize.py", "usercustomize.py", "*.pth", ".pytest_cache",
                        "__pycache__", "*.pyc", ".npmrc", "jest.config.*", "*_test.go"}) {
    EXPECT_NE(std::find(p.begin(), p.end(), f), p.end()) << f;
  }
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

// A measured baseline is written as the shortest number that reads back as the same double.
TEST(RenderTaskToml, ABaselineIsWrittenInItsShortestExactForm) {
  TaskDraft d;
  d.name = "b";
  d.description = "a measured baseline";
  d.metric_name = "s";
  d.metric = "python3 m.py";
  d.starter = {"m.py"};
  d.editable = {"m.py"};
  d.timeout_s = 60;
  for (double v : {0.6137, 1.0 / 3.0, 2.5e-7, 123456.75, 1e20}) {
    d.baseline = v;
    std::string text = render_task_toml(d);
    EXPECT_EQ(text.find("0000000"), std::string::npos) << text;
    TaskSpec t = parse_task(text, "task.toml", "");
    EXPECT_EQ(t.rules["baseline"].get<double>(), v) << text;
  }
  d.baseline = 0.6137;
  EXPECT_NE(render_task_toml(d).find("baseline = 0.6137  #"), std::string::npos);
}

TEST(RenderTaskToml, AnOutsideTimedMetricWithItsCanaryAndGuard) {
  TaskDraft d;
  d.name = "timed";
  d.metric = "python3 work.py";
  d.wall_time = true;
  d.metric_output = "sha256:00ff";
  d.check = "python3 -m pytest -q tests";
  d.canary = "tests";
  d.integrity = "python3 guard.py";
  d.starter = {"work.py", "tests/test_w.py"};
  d.editable = {"*"};
  d.description = default_description(d);
  TaskSpec t = parse_task(render_task_toml(d), "task.toml", "");
  EXPECT_EQ(t.rules["metric"], "python3 work.py");
  EXPECT_EQ(t.rules["metric_kind"], "wall_time");
  EXPECT_EQ(t.rules["metric_output"], "sha256:00ff");
  EXPECT_EQ(t.rules["canary"], "tests");
  EXPECT_EQ(t.rules["integrity"], "python3 guard.py");
  EXPECT_NE(t.description.find("times it from outside"), std::string::npos) << t.description;
  EXPECT_NE(t.description.find("sitecustomize.py"), std::string::npos) << t.description;
  EXPECT_NE(t.description.find("failing test added to tests/"), std::string::npos);
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
  for (const char* k : {"metric_kind", "metric_output", "canary", "integrity"}) {
    EXPECT_FALSE(t.rules.contains(k)) << k;
  }
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
