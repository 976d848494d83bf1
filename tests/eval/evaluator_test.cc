#include "eval/evaluator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

namespace marathon::eval {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A throw-away task whose evaluator is a shell script.
class ScriptTask : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("marathon-eval-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "starter");
    std::ofstream(dir_ / "starter" / "kernel.cc") << "int x;\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  TaskSpec task(const std::string& script, double timeout_s = 20) {
    std::ofstream(dir_ / "eval.sh") << "#!/bin/sh\n" << script << "\n";
    fs::permissions(dir_ / "eval.sh", fs::perms::owner_all);
    std::string toml =
        "name = \"t\"\ndescription = \"d\"\n"
        "[files]\nstarter = [\"kernel.cc\"]\neditable = [\"*.cc\"]\n"
        "[goal]\nmetric = \"speedup\"\ndirection = \"max\"\n"
        "[evaluator]\ncommand = [\"./eval.sh\"]\nversion = \"1\"\ntimeout_s = " +
        std::to_string(timeout_s) + "\n";
    return parse_task(toml, (dir_ / "task.toml").string(), dir_);
  }

  EvalOutcome run(const std::string& script, double timeout_s = 20) {
    return run_evaluator(task(script, timeout_s), dir_ / "starter");
  }

  fs::path dir_;
};

const char* kGood =
    R"(echo '{"schema_version": 1, "correct": true, "score": 2.5, "log": "fine", "extra": 7}')";

TEST_F(ScriptTask, ValidResultIsOkAndNormalised) {
  EvalOutcome o = run(kGood);
  EXPECT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  EXPECT_EQ(o.result["score"], 2.5);
  EXPECT_EQ(o.result["metrics"], json::object());
  EXPECT_EQ(o.result["violations"], json::array());
  EXPECT_EQ(o.result["extra"], 7);  // extra fields are kept
  EXPECT_FALSE(o.result.contains("error_kind"));
}

TEST_F(ScriptTask, ProgressLinesBeforeTheResultAreIgnored) {
  EvalOutcome o = run(std::string("echo compiling...\necho 'step 2'\n") + kGood);
  EXPECT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
}

TEST_F(ScriptTask, EvaluatorSeesCandidateAndTaskDirs) {
  EvalOutcome o =
      run(R"(printf '{"schema_version":1,"correct":false,"score":null,"log":"%s|%s|%s"}\n' )"
          R"x("$MARATHON_CANDIDATE_DIR" "$MARATHON_TASK_DIR" "$(pwd)")x");
  ASSERT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  std::string expect = (dir_ / "starter").string() + "|" + dir_.string() + "|" + dir_.string();
  EXPECT_EQ(o.result["log"], expect);
}

TEST_F(ScriptTask, GarbageOutputIsInvalidOutputAndQuotesIt) {
  EvalOutcome o = run("echo 'Traceback: something broke'");
  EXPECT_EQ(o.status, EvalStatus::kInvalidOutput);
  EXPECT_EQ(o.result["correct"], false);
  EXPECT_EQ(o.result["error_kind"], "invalid_output");
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("no JSON object"));
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("Traceback: something broke"));
}

TEST_F(ScriptTask, EmptyOutputIsInvalidOutput) {
  EvalOutcome o = run("true");
  EXPECT_EQ(o.status, EvalStatus::kInvalidOutput);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("stdout was empty"));
}

TEST_F(ScriptTask, MissingFieldIsNamed) {
  EvalOutcome o = run(R"(echo '{"schema_version": 1, "score": 1.0}')");
  EXPECT_EQ(o.status, EvalStatus::kInvalidOutput);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("missing field \"correct\""));
}

TEST_F(ScriptTask, WrongTypeIsNamed) {
  EvalOutcome o = run(R"(echo '{"schema_version": 1, "correct": "yes", "score": 1.0}')");
  EXPECT_EQ(o.status, EvalStatus::kInvalidOutput);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("\"correct\" must be true or false"));
}

TEST_F(ScriptTask, CorrectWithoutScoreIsACorrectnessOnlyResult) {
  // e.g. a GPU task checked through Triton's interpreter on a CPU machine: valid, never ranked.
  EvalOutcome o = run(R"(echo '{"schema_version": 1, "correct": true, "score": null}')");
  EXPECT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  EXPECT_TRUE(o.result["score"].is_null());
}

TEST_F(ScriptTask, UnknownSchemaVersionIsInvalid) {
  EvalOutcome o = run(R"(echo '{"schema_version": 2, "correct": false, "score": null}')");
  EXPECT_EQ(o.status, EvalStatus::kInvalidOutput);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("schema_version 2"));
}

TEST_F(ScriptTask, NonzeroExitIsDistinctAndKeepsStderr) {
  EvalOutcome o = run(std::string(kGood) + "\necho 'disk full' >&2\nexit 3");
  EXPECT_EQ(o.status, EvalStatus::kNonzeroExit);
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.result["correct"], false);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("status 3"));
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("disk full"));
}

TEST_F(ScriptTask, CrashBySignalIsDistinct) {
  EvalOutcome o = run("kill -SEGV $$");
  EXPECT_EQ(o.status, EvalStatus::kCrash);
  EXPECT_EQ(o.signal, SIGSEGV);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("SIGSEGV"));
}

TEST_F(ScriptTask, MissingCommandIsNonzeroExit127) {
  TaskSpec t = task(kGood);
  t.evaluator.argv = {"./does-not-exist"};
  EvalOutcome o = run_evaluator(t, dir_ / "starter");
  EXPECT_EQ(o.status, EvalStatus::kNonzeroExit);
  EXPECT_EQ(o.exit_code, 127);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("cannot execute ./does-not-exist"));
}

// A sleep length unique to this test process, to find its processes in /proc afterwards (the
// evaluator's own pids are those of its PID namespace).
std::string sleep_mark(int n) {
  return "3000." + std::to_string(getpid() % 100000) + std::to_string(n);
}

// True once no live process has `needle` in its command line (waits up to 10 s: the kernel tears
// a PID namespace down asynchronously).
bool no_process_with(const std::string& needle) {
  for (int i = 0; i < 200; ++i) {
    bool found = false;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
      std::ifstream in(e.path() / "cmdline", std::ios::binary);
      std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      for (char& c : cmd) c = c == '\0' ? ' ' : c;
      found = found || cmd.find(needle) != std::string::npos;
    }
    if (!found) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST_F(ScriptTask, TimeoutKillsASleepingGrandchild) {
  std::string mark = sleep_mark(1);
  EvalOutcome o = run("sleep " + mark + " &\nwait", /*timeout_s=*/1);
  EXPECT_EQ(o.status, EvalStatus::kTimeout);
  EXPECT_EQ(o.result["error_kind"], "timeout");
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("did not finish within 1 s"));
  EXPECT_TRUE(no_process_with("sleep " + mark)) << "the grandchild survived the timeout";
}

TEST_F(ScriptTask, StragglersAreKilledWhenTheEvaluatorExits) {
  std::string mark = sleep_mark(2), detached = sleep_mark(3);
  EvalOutcome o = run("sleep " + mark + " > /dev/null 2>&1 &\nsetsid sleep " + detached +
                      " > /dev/null 2>&1 &\n" + kGood);
  EXPECT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  EXPECT_TRUE(no_process_with("sleep " + mark)) << "a straggler outlived its evaluator";
  EXPECT_TRUE(no_process_with("sleep " + detached)) << "a setsid straggler outlived it";
}

TEST_F(ScriptTask, TheEvaluatorSeesNoSecretAndCannotWriteTheTaskOrCandidate) {
  setenv("OPENAI_API_KEY", "sk-evaluator-leak", 1);
  EvalOutcome o =
      run("touch starter/kernel.cc.new 2>/dev/null && echo candidate-writable\n"
          "touch task.toml.new 2>/dev/null && echo task-writable\n"
          "env | grep -c sk-evaluator-leak >&2\n"
          "cat /proc/1/environ | tr '\\0' '\\n' | grep sk-evaluator-leak >&2\n" +
          std::string(kGood));
  unsetenv("OPENAI_API_KEY");
  ASSERT_EQ(o.status, EvalStatus::kOk) << o.result.dump();
  EXPECT_EQ(o.stderr_tail.find("sk-evaluator-leak"), std::string::npos) << o.stderr_tail;
  EXPECT_FALSE(fs::exists(dir_ / "starter" / "kernel.cc.new"));
  EXPECT_FALSE(fs::exists(dir_ / "task.toml.new"));
}

TEST_F(ScriptTask, AFolderTheTaskSaysItsEvaluatorReadsIsReadableAndNoOtherIs) {
  // A sibling folder, as tasks/mla-prefill reads tasks/mla's input families.
  fs::path shared = dir_.string() + "-shared";
  fs::path other = dir_.string() + "-other";
  fs::create_directories(shared);
  fs::create_directories(other);
  std::ofstream(shared / "inputs.txt") << "shared-ok\n";
  std::ofstream(other / "inputs.txt") << "other-ok\n";
  const std::string script = "cat ../" + shared.filename().string() + "/inputs.txt >&2\n" +
                             "cat ../" + other.filename().string() + "/inputs.txt >&2\n" + kGood;
  TaskSpec t = task(script);
  EvalOutcome without = run_evaluator(t, dir_ / "starter");
  t.evaluator.reads = {"../" + shared.filename().string() + "/"};
  EvalOutcome with = run_evaluator(t, dir_ / "starter");
  fs::remove_all(shared);
  fs::remove_all(other);
  ASSERT_EQ(with.status, EvalStatus::kOk) << with.result.dump();
  EXPECT_THAT(with.stderr_tail, HasSubstr("shared-ok"));
  if (sandbox::default_isolation() == sandbox::Isolation::kNone) GTEST_SKIP() << "no sandbox here";
  EXPECT_THAT(with.stderr_tail, ::testing::Not(HasSubstr("other-ok")));
  EXPECT_THAT(without.stderr_tail, ::testing::Not(HasSubstr("shared-ok")));
}

TEST_F(ScriptTask, HugeOutputIsCappedNotFatal) {
  TaskSpec t = task("head -c 3000000 /dev/zero | tr '\\0' x\necho\n" + std::string(kGood));
  EvalOptions opt;
  opt.stdout_cap = 4096;
  EvalOutcome o = run_evaluator(t, dir_ / "starter", opt);
  EXPECT_EQ(o.status, EvalStatus::kInvalidOutput);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("truncated"));
}

TEST(ParseResult, WholeStdoutMayBeAPrettyPrintedObject) {
  std::string err;
  auto r = parse_result(
      "{\n  \"schema_version\": 1,\n  \"correct\": false,\n  \"score\": null\n}\n", &err);
  ASSERT_TRUE(r.has_value()) << err;
  EXPECT_EQ((*r)["log"], "");
}

// The candidate controls stdout: quoting bytes that are not UTF-8 must not throw
// (tests/fuzz/corpus/eval_result/regression-invalid-utf8-stdout.txt).
TEST(ParseResult, InvalidUtf8OnStdoutIsQuotedReplacedNotThrown) {
  const std::string out = "{\"schema_version\": 1, \"me\x8brics\": []";
  std::string err;
  EXPECT_FALSE(parse_result(out, &err).has_value());
  EXPECT_THAT(err, HasSubstr("stdout began: "));
  EXPECT_THAT(err, HasSubstr("me\xEF\xBF\xBDrics"));  // U+FFFD
  marathon::sandbox::LaunchResult p;
  p.started = true;
  p.exit_code = 0;
  p.out = out;
  EvalOutcome o = classify(p, 10);
  EXPECT_EQ(o.status, EvalStatus::kInvalidOutput);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("no JSON object on stdout"));
}

// The log quotes stderr: bytes that are not UTF-8 would make the result throw wherever it is dumped
// (`marathon eval --json`) (tests/fuzz/corpus/eval_result/regression-invalid-utf8-stderr.txt).
TEST_F(ScriptTask, StderrThatIsNotUtf8IsLoggedWithReplacements) {
  EvalOutcome o = run("printf 'oops \\377\\n' >&2; exit 3");
  EXPECT_EQ(o.status, EvalStatus::kNonzeroExit);
  std::string dumped;
  EXPECT_NO_THROW(dumped = o.result.dump());
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("oops \xEF\xBF\xBD"));
}

TEST(ParseResult, ViolationsMustBeStrings) {
  std::string err;
  auto r =
      parse_result(R"({"schema_version":1,"correct":false,"score":null,"violations":[1]})", &err);
  EXPECT_FALSE(r.has_value());
  EXPECT_THAT(err, HasSubstr("\"violations\" must be an array of strings"));
}

// Evaluator output that is not valid UTF-8 (a candidate's binary print, a cut-off character):
// the evaluation is kept, its text decoded leniently, and the result can always be logged.
TEST_F(ScriptTask, InvalidUtf8InTheResultIsDecodedLenientlyAndTheScoreKept) {
  EvalOutcome o = run(
      R"(printf '{"schema_version": 1, "correct": true, "score": 3.5, "log": "bad \377\300 bytes"}\n')");
  ASSERT_EQ(o.status, EvalStatus::kOk)
      << o.result.dump(-1, ' ', false, json::error_handler_t::replace);
  EXPECT_EQ(o.result["score"], 3.5);
  EXPECT_EQ(o.result["log"], "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes");
  EXPECT_NO_THROW(o.result.dump());  // what the event log writes
}

TEST_F(ScriptTask, InvalidUtf8GarbageAndStderrStillGiveALoggableOutcome) {
  EvalOutcome o = run(R"(printf 'Traceback \377\376 broke\n'; printf 'err \377\n' >&2)");
  EXPECT_EQ(o.status, EvalStatus::kInvalidOutput);
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("Traceback \xEF\xBF\xBD"));
  EXPECT_THAT(o.result["log"].get<std::string>(), HasSubstr("err \xEF\xBF\xBD"));
  EXPECT_NO_THROW(o.result.dump());
  EXPECT_NO_THROW(json(o.stderr_tail).dump());
}

TEST(ParseResult, QuoteOfLongOutputNeverSplitsACharacter) {
  // 199 ASCII bytes, then a 2-byte character that the 200-byte quote cuts in half.
  std::string out = std::string(199, 'x') + "\xC3\xA9" + " and more";
  std::string err;
  EXPECT_FALSE(parse_result(out, &err).has_value());
  EXPECT_THAT(err, HasSubstr("stdout began"));
  EXPECT_NO_THROW(json(err).dump());
}

}  // namespace
}  // namespace marathon::eval

// `marathon eval` run by hand finds the environment `make` installed, without MARATHON_PYTHON.
TEST(DefaultPython, PrefersMarathonPythonThenTheInstalledVenvThenPython3) {
  namespace fs = std::filesystem;
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* name : {"HOME", "MARATHON_PYTHON", "MARATHON_VENV", "XDG_CACHE_HOME"}) {
    const char* v = std::getenv(name);
    saved[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  fs::path home = fs::temp_directory_path() / ("marathon-python-" + std::to_string(::getpid()));
  fs::remove_all(home);
  unsetenv("MARATHON_PYTHON");
  unsetenv("MARATHON_VENV");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", home.c_str(), 1);
  EXPECT_EQ(marathon::eval::default_python(), "python3");  // no venv yet

  fs::path bin = home / ".cache" / "marathon" / "venv" / "bin";
  fs::create_directories(bin);
  std::ofstream(bin / "python") << "#!/bin/sh\n";
  fs::permissions(bin / "python", fs::perms::owner_all);
  EXPECT_EQ(marathon::eval::default_python(), (bin / "python").string());

  setenv("MARATHON_VENV", (home / "elsewhere").c_str(), 1);  // named but absent: not guessed
  EXPECT_EQ(marathon::eval::default_python(), "python3");
  unsetenv("MARATHON_VENV");

  setenv("MARATHON_PYTHON", "/opt/py/bin/python3", 1);
  EXPECT_EQ(marathon::eval::default_python(), "/opt/py/bin/python3");
  unsetenv("MARATHON_PYTHON");

  for (const auto& [name, value] : saved) {
    if (value)
      setenv(name.c_str(), value->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  fs::remove_all(home);
}
