// An installed marathon used like a tool: `cmake --install` into a temporary prefix, then the
// installed binary run from a directory that has nothing to do with marathon's checkout, with
// MARATHON_PYTHON unset: `init` on a fresh repository, a short search run, `status`, and a
// bundled task evaluated by its name. It must find its harness, its tasks and the Python
// environment recorded at install time on its own.
#include <gtest/gtest.h>

#include <array>

#include "../cli/fresh_repo.h"
#include "goal/task_spec.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

// The interpreter the tests run evaluators with, as it names itself.
std::string test_python() {
  const char* p = std::getenv("MARATHON_PYTHON");
  std::string python = p && *p ? p : "python3";
  std::string cmd = mt::sh_quote(python) + " -c 'import sys; print(sys.executable)'";
  std::array<char, 4096> buf{};
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return "";
  while (std::fgets(buf.data(), buf.size(), f)) out += buf.data();
  ::pclose(f);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST(InstalledMarathon, RunsFromAnUnrelatedDirectoryOnAFreshRepository) {
  mt::TempDir tmp("installed");
  const fs::path prefix = tmp / "prefix";
  // The interpreter recorded at install: the tests' own, under a name no PATH lookup finds, so
  // that a result naming it proves the installed binary adopted the record.
  const std::string real_python = test_python();
  ASSERT_FALSE(real_python.empty());
  fs::create_directories(tmp / "recorded-python");
  fs::create_symlink(real_python, tmp / "recorded-python/python3");
  const std::string python = (tmp / "recorded-python/python3").string();
  std::string install =
      "MARATHON_PYTHON=" + mt::sh_quote(python) + " " + mt::sh_quote(MARATHON_CMAKE) +
      " --install " + mt::sh_quote(MARATHON_BUILD_DIR) + " --prefix " +
      mt::sh_quote(prefix.string()) + " >" + mt::sh_quote((tmp / "install.log").string()) + " 2>&1";
  ASSERT_EQ(std::system(install.c_str()), 0) << mt::read_text(tmp / "install.log");
  const std::string marathon = (prefix / "bin/marathon").string();
  ASSERT_TRUE(fs::is_regular_file(prefix / "share/marathon/harness/repo_eval.py"));
  ASSERT_TRUE(fs::is_regular_file(prefix / "share/marathon/tasks/flaky-tests/task.toml"));
  ASSERT_TRUE(fs::is_regular_file(prefix / "share/doc/marathon/tasks.md"));
  EXPECT_EQ(mt::read_text(prefix / "share/marathon/python"), python + "\n");

  // The user's repository and a working directory elsewhere; nothing points at the checkout.
  mt::make_repo(
      tmp / "myrepo",
      {{"config.py", "DELAY_MS = 40  # marathon:knob [5, 10, 20, 40]\n"},
       {"bench.py", "from config import DELAY_MS\nprint('warm-up')\nprint(DELAY_MS * 2)\n"}});
  const fs::path work = tmp / "elsewhere";
  fs::create_directories(work);
  const std::map<std::string, std::string> env = {{"MARATHON_PYTHON", ""}};
  fs::path log = tmp / "log";
  auto marathon_in = [&](const std::vector<std::string>& args) {
    fs::remove(log);
    int rc = mt::run_in(work, marathon, args, env, log, "", 600);
    return std::make_pair(rc, mt::read_text(log));
  };

  auto [vrc, version] = marathon_in({"--version"});
  EXPECT_EQ(vrc, 0);
  EXPECT_NE(version.find("(commit "), std::string::npos) << version;

  auto [irc, init] = marathon_in(
      {"init", "speed", "--repo", "../myrepo", "--metric", "python3 bench.py", "--runs", "1"});
  ASSERT_EQ(irc, 0) << init;
  EXPECT_NE(init.find("baseline    80"), std::string::npos) << init;
  TaskSpec t = load_task(work / "speed");
  EXPECT_EQ(t.rules["protected"], json({"bench.py"}));
  EXPECT_EQ(mt::read_text(work / "speed/evaluate.py"),
            mt::read_text(prefix / "share/marathon/harness/repo_eval.py"));

  auto [erc, evaluated] = marathon_in({"eval", "speed", "--json"});
  ASSERT_EQ(erc, 0) << evaluated;
  json r = mt::last_json_line(evaluated);
  EXPECT_EQ(r["score"], 80) << evaluated;
  EXPECT_EQ(r["python"], python) << "the evaluator ran on the recorded interpreter";

  auto [rrc, ran] = marathon_in({"run", "speed", "--policy", "search", "--max-tool-calls", "12",
                                 "--run-dir", "run", "--quiet"});
  ASSERT_EQ(rrc, 0) << ran;
  State s = mt::load_state(work / "run");
  EXPECT_TRUE(s.done);
  ASSERT_TRUE(s.best_score) << ran;
  EXPECT_LT(*s.best_score, 80) << "the search found a smaller delay";

  auto [src, status] = marathon_in({"status", "run"});
  ASSERT_EQ(src, 0) << status;
  EXPECT_NE(status.find("finished"), std::string::npos) << status;
  EXPECT_NE(status.find("baseline 80"), std::string::npos) << status;

  // A bundled task by its name, from the installed tasks folder.
  auto [brc, bundled] = marathon_in({"eval", "api-migration", "--json"});
  ASSERT_EQ(brc, 0) << bundled;
  json b = mt::last_json_line(bundled);
  EXPECT_EQ(b["correct"], true) << bundled;
  EXPECT_EQ(b["score"], 120);
  EXPECT_FALSE(fs::exists(work / "api-migration"));
}

}  // namespace
}  // namespace marathon
