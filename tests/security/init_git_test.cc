// `marathon init` on a repository received whole (an archive, a shared folder with its .git/):
// its own git configuration names programs git would run on the host by itself: core.fsmonitor
// (run by `git status`), a filter driver's clean and smudge commands (status, archive), hooks in
// .git/hooks and in a core.hooksPath folder, a pager and an external diff. The real binary runs
// init on it: the task is made as from any repository, and none of those programs ran (each
// would leave a marker file).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "cli/fresh_repo.h"
#include "hostile_run.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

TEST(InitGit, ARepositorysOwnConfigurationAndHooksRunNothingOnTheHost) {
  mt::TempDir tmp("init-git");
  const fs::path repo = tmp / "repo", markers = tmp / "markers", hooks = tmp / "hooks";
  fs::create_directories(markers);
  fs::create_directories(hooks);
  mt::make_repo(repo, {{"value.txt", "7\n"},
                       {"measure.sh", "#!/bin/sh\ncat value.txt\n"},
                       {".gitattributes", "*.txt filter=evil diff=evil\n"}});
  // One program per route, each leaving its own marker.
  auto program = [&](const fs::path& at, const std::string& name) {
    std::ofstream(at) << "#!/bin/sh\ntouch " << mt::sh_quote((markers / name).string())
                      << "\ncat\n";
    ::chmod(at.c_str(), 0755);
    return at.string();
  };
  const std::string fsmonitor = program(tmp / "fsmonitor.sh", "fsmonitor");
  const std::string clean = program(tmp / "clean.sh", "filter-clean");
  const std::string smudge = program(tmp / "smudge.sh", "filter-smudge");
  const std::string pager = program(tmp / "pager.sh", "pager");
  const std::string diff = program(tmp / "diff.sh", "diff");
  for (const char* hook : {"post-index-change", "pre-commit", "post-checkout",
                           "reference-transaction", "pre-auto-gc", "post-rewrite"}) {
    program(repo / ".git/hooks" / hook, std::string("hook-") + hook);
    program(hooks / hook, std::string("hooks-path-") + hook);
  }
  std::ofstream(repo / ".git/config", std::ios::app)
      << "[core]\n\tfsmonitor = " << fsmonitor << "\n\tpager = " << pager
      << "\n[filter \"evil\"]\n\tclean = " << clean << "\n\tsmudge = " << smudge
      << "\n\trequired = false\n[diff \"evil\"]\n\tcommand = " << diff
      << "\n[diff]\n\texternal = " << diff << "\n";
  // An uncommitted change, so that status has something to compare (and refresh).
  std::ofstream(repo / "value.txt") << "9\n";

  // Control: the same repository's git, run plainly, does run the fsmonitor program.
  {
    const std::string cmd = "cd " + mt::sh_quote(repo.string()) + " && git status >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    ASSERT_TRUE(fs::exists(markers / "fsmonitor")) << "the planted fsmonitor would not run at all";
    fs::remove_all(markers);
    fs::create_directories(markers);
  }
  // A second configuration route: core.hooksPath set in the repository.
  {
    const std::string cmd = "git -C " + mt::sh_quote(repo.string()) + " config core.hooksPath " +
                            mt::sh_quote(hooks.string());
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  const fs::path log = tmp / "init.log";
  int rc = mt::run_in(tmp.path(), MARATHON_BINARY,
                      {"init", "t", "--repo", repo.string(), "--metric", "sh measure.sh"}, {}, log,
                      "", 300);
  const std::string out = mt::read_text(log);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("baseline    7"), std::string::npos) << "the committed value: " << out;
  EXPECT_NE(out.find("1 uncommitted change(s)"), std::string::npos) << out;
  EXPECT_EQ(mt::read_text(tmp / "t/repo/value.txt"), "7\n");
  std::vector<std::string> ran;
  for (const auto& e : fs::directory_iterator(markers)) ran.push_back(e.path().filename());
  EXPECT_TRUE(ran.empty()) << "ran on the host: " << mt::joined(ran);
}

}  // namespace
}  // namespace marathon
