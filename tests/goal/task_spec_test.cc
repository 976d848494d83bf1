#include "goal/task_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace marathon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char* kValid = R"(name = "toy"
description = "Make it fast."
needs_gpu = false

[files]
starter = ["kernel.cc"]
editable = ["*.cc"]

[goal]
metric = "speedup"
direction = "max"
target = 4

[evaluator]
command = ["{python}", "evaluate.py", "--dir", "{candidate_dir}"]
timeout_s = 30
version = "2"

[rules]
banned_imports = ["fla"]

[limits]
max_tool_calls = 50
)";

class TaskDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("marathon-task-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "starter");
    std::ofstream(dir_ / "starter" / "kernel.cc") << "int x;\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& toml) { std::ofstream(dir_ / "task.toml") << toml; }

  // Loads and returns the error text ("" when it loaded).
  std::string error_of(const std::string& toml) {
    write(toml);
    try {
      load_task(dir_);
    } catch (const TaskError& e) {
      return e.what();
    }
    return "";
  }

  static std::string replace(std::string s, const std::string& from, const std::string& to) {
    auto p = s.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    if (p != std::string::npos) s.replace(p, from.size(), to);
    return s;
  }

  fs::path dir_;
};

TEST_F(TaskDir, ValidSpecLoadsEveryField) {
  write(kValid);
  TaskSpec s = load_task(dir_);
  EXPECT_EQ(s.name, "toy");
  EXPECT_EQ(s.starter, std::vector<std::string>{"kernel.cc"});
  EXPECT_EQ(s.starter_dir, "starter");
  EXPECT_EQ(s.goal.direction, Direction::kMax);
  ASSERT_TRUE(s.goal.target.has_value());
  EXPECT_EQ(*s.goal.target, 4.0);
  EXPECT_EQ(s.evaluator.timeout_s, 30.0);
  EXPECT_EQ(s.evaluator.version, "2");
  EXPECT_EQ(s.rules["banned_imports"][0], "fla");
  EXPECT_EQ(s.limits["max_tool_calls"], 50.0);
  EXPECT_TRUE(is_editable(s, "kernel.cc"));
  EXPECT_FALSE(is_editable(s, "sub/kernel.cc"));  // '*' does not cross '/'
  EXPECT_FALSE(is_editable(s, "kernel.h"));
}

TEST_F(TaskDir, MissingKeyNamesFileAndKey) {
  std::string err = error_of(replace(kValid, "metric = \"speedup\"\n", ""));
  EXPECT_THAT(err, HasSubstr("task.toml"));
  EXPECT_THAT(err, HasSubstr("[goal].metric"));
  EXPECT_THAT(err, HasSubstr("missing"));
}

TEST_F(TaskDir, MissingTableNamesIt) {
  std::string err = error_of(replace(kValid, "[evaluator]", "[evaluatr]"));
  EXPECT_THAT(err, HasSubstr("evaluator: missing"));
}

TEST_F(TaskDir, WrongTypeNamesKeyLineAndType) {
  std::string err = error_of(replace(kValid, "timeout_s = 30", "timeout_s = \"thirty\""));
  EXPECT_THAT(err,
              HasSubstr("task.toml:16: [evaluator].timeout_s: must be a number, got a string"));
}

TEST_F(TaskDir, WrongElementTypeInStarterList) {
  std::string err = error_of(replace(kValid, "starter = [\"kernel.cc\"]", "starter = [1]"));
  EXPECT_THAT(err, HasSubstr("[files].starter: element 0 must be a string"));
}

TEST_F(TaskDir, BadDirectionIsRejected) {
  std::string err = error_of(replace(kValid, "direction = \"max\"", "direction = \"up\""));
  EXPECT_THAT(err, HasSubstr(":11: [goal].direction: must be \"max\" or \"min\", got \"up\""));
}

TEST_F(TaskDir, MissingStarterFileIsRejected) {
  fs::remove(dir_ / "starter" / "kernel.cc");
  std::string err = error_of(kValid);
  EXPECT_THAT(err, HasSubstr("[files].starter: starter file \"kernel.cc\" not found"));
}

TEST_F(TaskDir, StarterPathEscapingTheTaskIsRejected) {
  std::string err =
      error_of(replace(kValid, "starter = [\"kernel.cc\"]", "starter = [\"../etc/passwd\"]"));
  EXPECT_THAT(err, HasSubstr("[files].starter"));
  EXPECT_THAT(err, HasSubstr("without \"..\""));
}

TEST_F(TaskDir, UnknownKeyIsATypo) {
  std::string err = error_of(replace(kValid, "timeout_s = 30", "timeout_s = 30\ntimeout = 3"));
  EXPECT_THAT(err, HasSubstr("[evaluator].timeout: unknown key"));
}

TEST_F(TaskDir, NonPositiveTimeoutIsRejected) {
  std::string err = error_of(replace(kValid, "timeout_s = 30", "timeout_s = 0"));
  EXPECT_THAT(err, HasSubstr("[evaluator].timeout_s: must be > 0"));
}

// Numbers that bound a run: each bad one named with file, line and key (goal/limits.h). An infinite
// or huge timeout would overflow the evaluator's deadline
// (tests/fuzz/corpus/task_spec/regression-infinite-timeout.toml).
TEST_F(TaskDir, TimeoutThatIsNotAFiniteDayAtMostIsRejected) {
  for (const char* bad : {"nan", "inf", "-inf", "86401", "1e300"}) {
    std::string err =
        error_of(replace(kValid, "timeout_s = 30", std::string("timeout_s = ") + bad));
    EXPECT_THAT(err, HasSubstr("task.toml:16: [evaluator].timeout_s: must be")) << bad;
  }
  EXPECT_EQ(error_of(replace(kValid, "timeout_s = 30", "timeout_s = 86400")), "");
}

// The budget reads these counts as int64: 1e30, inf or nan would make that conversion undefined
// (tests/fuzz/corpus/task_spec/regression-huge-count.toml).
TEST_F(TaskDir, IntegerLimitsMustBeWholeNumbersInRange) {
  const std::pair<const char*, const char*> cases[] = {
      {"max_tool_calls = 2.5", "must be a whole number"},
      {"max_tool_calls = 1e30", "must be written as an integer"},
      {"max_tool_calls = 9223372036854775807", "must be <= "},
      {"max_tool_calls = -1", "must be >= 0"},
      {"max_tool_calls = nan", "must be a finite number"},
      {"max_tokens = inf", "must be a finite number"},
  };
  for (const auto& [line, why] : cases) {
    std::string err = error_of(replace(kValid, "max_tool_calls = 50", line));
    std::string key = std::string(line).substr(0, std::string(line).find(' '));
    EXPECT_THAT(err, HasSubstr("task.toml:23: [limits]." + key + ": " + why)) << line;
  }
}

TEST_F(TaskDir, RealLimitsMustBeFiniteAndInRange) {
  for (const char* line : {"max_wall_s = nan", "max_wall_s = inf", "max_cost_usd = nan",
                           "max_gpu_s = inf", "max_wall_s = 1e12"}) {
    std::string err = error_of(replace(kValid, "max_tool_calls = 50", line));
    std::string key = std::string(line).substr(0, std::string(line).find(' '));
    EXPECT_THAT(err, HasSubstr("task.toml:23: [limits]." + key + ": must be")) << line;
  }
  EXPECT_EQ(error_of(replace(kValid, "max_tool_calls = 50", "max_cost_usd = 12.5")), "");
}

TEST_F(TaskDir, TargetThatIsNotFiniteIsRejected) {
  for (const char* bad : {"nan", "inf", "-inf"}) {
    std::string err = error_of(replace(kValid, "target = 4", std::string("target = ") + bad));
    EXPECT_THAT(err, HasSubstr("task.toml:12: [goal].target: must be")) << bad;
  }
}

TEST_F(TaskDir, PriceThatIsNotFiniteIsRejected) {
  std::string err =
      error_of(std::string(kValid) + "\n[prices]\n\"a:b\" = { prompt = inf, completion = 1 }\n");
  EXPECT_THAT(err, HasSubstr("[prices.a:b].prompt: must be a finite number"));
  err = error_of(std::string(kValid) + "\n[prices]\n\"a:b\" = { prompt = 1, completion = nan }\n");
  EXPECT_THAT(err, HasSubstr("[prices.a:b].completion: must be a finite number"));
}

// std::regex recurses once per character: a long name would overflow the stack
// (tests/fuzz/corpus/task_spec/regression-long-name.toml).
TEST_F(TaskDir, VeryLongNameIsCheckedWithoutExhaustingTheStack) {
  const std::string name(2'000'000, 'a');
  EXPECT_EQ(error_of(replace(kValid, "name = \"toy\"", "name = \"" + name + "\"")), "");
  EXPECT_THAT(error_of(replace(kValid, "name = \"toy\"", "name = \"" + name + "A\"")),
              HasSubstr("name: must be lower-case letters"));
  EXPECT_THAT(error_of(replace(kValid, "name = \"toy\"", "name = \"-toy\"")),
              HasSubstr("name: must be lower-case letters"));
}

TEST_F(TaskDir, EmptyEditableListIsRejected) {
  std::string err = error_of(replace(kValid, "editable = [\"*.cc\"]", "editable = []"));
  EXPECT_THAT(err, HasSubstr("[files].editable: must not be empty"));
}

TEST_F(TaskDir, TomlSyntaxErrorHasLine) {
  std::string err = error_of(replace(kValid, "needs_gpu = false", "needs_gpu = = false"));
  EXPECT_THAT(err, HasSubstr("task.toml:3: TOML syntax error"));
}

TEST_F(TaskDir, MissingTaskTomlIsAnError) {
  std::string err;
  try {
    load_task(dir_);
  } catch (const TaskError& e) {
    err = e.what();
  }
  EXPECT_THAT(err, HasSubstr("task.toml"));
}

TEST_F(TaskDir, MissingFolderIsAnError) { EXPECT_THROW(load_task(dir_ / "nope"), TaskError); }

TEST_F(TaskDir, BadPricesAreRejected) {
  std::string err =
      error_of(std::string(kValid) + "\n[prices]\n\"a:b\" = { prompt = -1, completion = 1 }\n");
  EXPECT_THAT(err, HasSubstr("[prices.a:b].prompt: must be >= 0"));
}

TEST_F(TaskDir, StringCommandRunsThroughShell) {
  write(replace(kValid, "command = [\"{python}\", \"evaluate.py\", \"--dir\", \"{candidate_dir}\"]",
                "command = \"./eval.sh\""));
  TaskSpec s = load_task(dir_);
  EXPECT_EQ(evaluator_argv(s, "py", "/c"),
            (std::vector<std::string>{"/bin/sh", "-c", "./eval.sh"}));
}

TEST_F(TaskDir, ArgvTokensAreSubstituted) {
  write(kValid);
  TaskSpec s = load_task(dir_);
  EXPECT_EQ(evaluator_argv(s, "/usr/bin/python3", "/tmp/cand"),
            (std::vector<std::string>{"/usr/bin/python3", "evaluate.py", "--dir", "/tmp/cand"}));
}

TEST_F(TaskDir, CanonicalJsonIgnoresFolderButTracksContent) {
  write(kValid);
  TaskSpec a = load_task(dir_);
  TaskSpec b = a;
  b.dir = "/elsewhere";
  EXPECT_EQ(canonical_json(a), canonical_json(b));
  b.evaluator.timeout_s = 31;
  EXPECT_NE(canonical_json(a), canonical_json(b));
  EXPECT_EQ(to_json(a)["goal"]["target"], 4.0);
  EXPECT_EQ(to_json(a)["evaluator"]["command"][0], "{python}");
}

TEST_F(TaskDir, EvaluatorReadsAreFoldersThatExistAndOnlyNamedWhenSet) {
  const std::string line = "version = \"2\"";
  write(kValid);
  EXPECT_FALSE(to_json(load_task(dir_))["evaluator"].contains("reads"));
  fs::create_directories(dir_.parent_path() / (dir_.filename().string() + "-shared"));
  std::string shared = "../" + dir_.filename().string() + "-shared";
  write(replace(kValid, line, line + "\nreads = [\"" + shared + "\"]"));
  TaskSpec s = load_task(dir_);
  EXPECT_EQ(s.evaluator.reads, std::vector<std::string>{shared});
  EXPECT_EQ(to_json(s)["evaluator"]["reads"][0], shared);
  std::string err = error_of(replace(kValid, line, line + "\nreads = [\"../no-such-folder\"]"));
  EXPECT_THAT(err, HasSubstr("[evaluator].reads"));
  EXPECT_THAT(err, HasSubstr("\"../no-such-folder\" is not a folder"));
  EXPECT_THAT(error_of(replace(kValid, line, line + "\nreads = \"../x\"")),
              HasSubstr("must be an array of strings"));
  fs::remove_all(dir_.parent_path() / (dir_.filename().string() + "-shared"));
}

TEST(RealTasks, CpuMatmulTaskLoads) {
  TaskSpec s = load_task(fs::path(MARATHON_SOURCE_DIR) / "tasks" / "cpu-matmul");
  EXPECT_EQ(s.name, "cpu-matmul");
  EXPECT_FALSE(s.needs_gpu);
  EXPECT_TRUE(is_editable(s, "kernel.cc"));
}

TEST(RealTasks, EveryTaskInTheRepoLoads) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(MARATHON_SOURCE_DIR) / "tasks")) {
    if (!fs::exists(e.path() / "task.toml")) continue;
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(load_task(e.path()));
    ++n;
  }
  EXPECT_GE(n, 1);
}

}  // namespace
}  // namespace marathon

namespace marathon {
namespace {

// The two optional task fields of the write limits and the finish rule: read when given, and absent
// from the canonical form when left at their defaults (so no result cache key of an existing task
// changes).
TEST(TaskSpecLimits, WritableAndFinishRuleAreReadAndOnlyNamedWhenSet) {
  const std::string base = R"(name = "toy"
description = "d"
[files]
starter = ["kernel.cc"]
editable = ["kernel.cc"]
[goal]
metric = "speedup"
direction = "max"
[evaluator]
command = ["true"]
timeout_s = 5
version = "1"
)";
  TaskSpec plain = parse_task(base, "task.toml", {});
  EXPECT_TRUE(plain.finish_needs_correct_evaluation);
  EXPECT_TRUE(plain.writable.empty());
  EXPECT_FALSE(to_json(plain)["files"].contains("writable"));
  EXPECT_FALSE(to_json(plain)["goal"].contains("finish_needs_correct_evaluation"));

  auto with = [&](const std::string& after, const std::string& line) {
    std::string s = base;
    s.insert(s.find(after) + after.size(), "\n" + line);
    return s;
  };
  std::string lifted = with("editable = [\"kernel.cc\"]", "writable = [\"notes/*\"]");
  lifted.insert(lifted.find("direction = \"max\"") + 17,
                "\nfinish_needs_correct_evaluation = false");
  TaskSpec t = parse_task(lifted, "task.toml", {});
  EXPECT_FALSE(t.finish_needs_correct_evaluation);
  EXPECT_EQ(t.writable, std::vector<std::string>{"notes/*"});
  EXPECT_EQ(to_json(t)["files"]["writable"], json::array({"notes/*"}));
  EXPECT_EQ(to_json(t)["goal"]["finish_needs_correct_evaluation"], false);

  std::string wrong = with("direction = \"max\"", "finish_needs_correct_evaluation = \"no\"");
  try {
    parse_task(wrong, "task.toml", {});
    FAIL() << "a string was accepted";
  } catch (const TaskError& e) {
    EXPECT_NE(std::string(e.what()).find("finish_needs_correct_evaluation"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace marathon
