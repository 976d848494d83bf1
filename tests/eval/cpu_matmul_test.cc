// The cpu-matmul task evaluated for real: g++, the harness, the rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "eval/evaluator.h"

namespace marathon::eval {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class CpuMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    task_ = load_task(fs::path(MARATHON_SOURCE_DIR) / "tasks" / "cpu-matmul");
    cand_ = fs::temp_directory_path() /
            ("marathon-matmul-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(cand_);
    fs::create_directories(cand_);
    std::ifstream in(task_.starter_path() / "kernel.cc");
    std::stringstream ss;
    ss << in.rdbuf();
    starter_ = ss.str();
  }
  void TearDown() override { fs::remove_all(cand_); }

  EvalOutcome eval(const std::string& kernel) {
    std::ofstream(cand_ / "kernel.cc") << kernel;
    EvalOptions o;
    o.seed = 1234;
    return run_evaluator(task_, cand_, o);
  }

  std::string replaced(const std::string& from, const std::string& to) {
    std::string s = starter_;
    auto p = s.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    if (p != std::string::npos) s.replace(p, from.size(), to);
    return s;
  }

  TaskSpec task_;
  fs::path cand_;
  std::string starter_;
};

TEST_F(CpuMatmul, StarterIsCorrectWithAScore) {
  EvalOutcome o = eval(starter_);
  ASSERT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  EXPECT_EQ(o.result["correct"], true) << o.result["log"];
  EXPECT_TRUE(o.result["score"].is_number());
  EXPECT_GT(o.result["score"].get<double>(), 0);
  EXPECT_EQ(o.result["seed"], 1234);
  EXPECT_EQ(o.result["violations"], json::array());
}

TEST_F(CpuMatmul, WrongKernelIsIncorrect) {
  // Skips the last row of C on ragged sizes: the poisoned entries are caught.
  EvalOutcome o = eval(replaced("for (int ii = 0; ii < n; ii += BLOCK_I)",
                                "for (int ii = 0; ii < n - (n % 2); ii += BLOCK_I)"));
  ASSERT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  EXPECT_EQ(o.result["correct"], false);
  EXPECT_TRUE(o.result["score"].is_null());
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("wrong result"));
}

TEST_F(CpuMatmul, CompileErrorIsAResultWithTheError) {
  EvalOutcome o = eval(replaced("std::memset(C, 0,", "std::memset(C, 0, undeclared_thing,"));
  ASSERT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  EXPECT_EQ(o.result["correct"], false);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("compile failed"));
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("undeclared_thing"));
}

TEST_F(CpuMatmul, BannedHeaderAndThreadsAreViolations) {
  EvalOutcome o = eval("#include <thread>\n" + starter_);
  ASSERT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  EXPECT_EQ(o.result["correct"], false);
  ASSERT_FALSE(o.result["violations"].empty());
  EXPECT_THAT(o.result["violations"][0].get<std::string>(), HasSubstr("<thread> is not allowed"));
}

TEST_F(CpuMatmul, CrashingKernelIsIncorrectNotAnEvaluatorFailure) {
  EvalOutcome o = eval(replaced("std::memset(C, 0,", "C = nullptr; std::memset(C, 0,"));
  ASSERT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  EXPECT_EQ(o.result["correct"], false);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("crashed"));
}

}  // namespace
}  // namespace marathon::eval
