// Run as root, the sandboxed command is uid 0 with no capability: the owner bits of root's files
// still apply to it. Every file of the read-only system folders that is not world-readable, and
// every folder there that is not world-searchable, is masked (an unreadable node, an empty folder),
// so the command reads what any user could. Tried as an attacker in both profiles: /etc/shadow, a
// root-only file and folder planted under /etc, the same through /proc/*/root, the runner's
// environment through /proc; the workspace, the candidate and the scratch folder still work.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "sandbox/bwrap_args.h"
#include "sandbox/launcher.h"

namespace marathon::sandbox {
namespace {

namespace fs = std::filesystem;

std::string token(const std::string& tag) {
  std::random_device rd;
  return tag + std::to_string(getpid()) + "r" + std::to_string(rd()) + std::to_string(rd());
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string joined(const std::vector<std::string>& a) {
  std::string s;
  for (const auto& x : a) s += x + " ";
  return s;
}

// A root-only file and a root-only folder (holding a world-readable file) under /etc, removed
// whatever the test does.
class PlantedUnderEtc {
 public:
  PlantedUnderEtc() {
    file_ = "/etc/" + token("marathon-root-only-");
    dir_ = "/etc/" + token("marathon-root-only-dir-");
    file_secret_ = token("file-secret-");
    dir_secret_ = token("dir-secret-");
    std::ofstream(file_) << file_secret_ << "\n";
    chmod(file_.c_str(), 0600);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "inside.conf") << dir_secret_ << "\n";
    chmod((dir_ / "inside.conf").c_str(), 0644);
    chmod(dir_.c_str(), 0700);
  }
  ~PlantedUnderEtc() {
    std::error_code ec;
    fs::remove(file_, ec);
    fs::remove_all(dir_, ec);
  }
  fs::path file_, dir_;
  std::string file_secret_, dir_secret_;
};

// What an attacker tries, as one shell command.
std::string attack(const PlantedUnderEtc& p) {
  const std::string f = p.file_.string(), d = p.dir_.string();
  return "id; cat /etc/shadow /etc/gshadow; cat " + f + "; cat " + d + "/inside.conf; ls -la " + d +
         "; cat /proc/self/root" + f + " /proc/1/root" + f +
         " /proc/1/root/etc/shadow; "
         "cat /proc/1/cwd" +
         f +
         "; "
         "for k in /etc/ssh/ssh_host_*_key /etc/ssl/private/*; do cat \"$k\"; done; "
         "cat /proc/1/environ /proc/*/environ; echo; "
         "echo probe-done; ";
}

// The contents an attacker must not see: /etc/shadow's lines with a password field, the planted
// secrets, the runner's secret variable.
void expect_nothing_read(const std::string& out, const PlantedUnderEtc& p,
                         const std::string& env_secret) {
  EXPECT_NE(out.find("probe-done"), std::string::npos) << out;
  EXPECT_EQ(out.find(p.file_secret_), std::string::npos) << "root-only file read:\n" << out;
  EXPECT_EQ(out.find(p.dir_secret_), std::string::npos) << "root-only folder read:\n" << out;
  EXPECT_EQ(out.find(env_secret), std::string::npos) << "runner's environment read:\n" << out;
  std::istringstream shadow(read_all("/etc/shadow"));
  for (std::string line; std::getline(shadow, line);) {
    if (line.size() < 8) continue;
    EXPECT_EQ(out.find(line), std::string::npos) << "/etc/shadow read: " << line << "\n" << out;
  }
  for (const char* dir : {"/etc/ssh", "/etc/ssl/private"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      struct stat st {};
      if (lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & S_IROTH))
        continue;
      std::string bytes = read_all(e.path());
      if (bytes.size() < 16) continue;
      EXPECT_EQ(out.find(bytes.substr(0, 64)), std::string::npos) << e.path() << " read:\n" << out;
    }
  }
}

class SandboxRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "root-only files concern a runner running as root";
    if (std::string why = sandbox_unavailable_reason(); !why.empty()) {
      GTEST_SKIP() << "bubblewrap cannot sandbox on this machine: " << why;
    }
    base_ = fs::temp_directory_path() / token("marathon-root-");
    fs::create_directories(base_);
    env_secret_ = token("sk-root-");
    setenv("OPENAI_API_KEY", env_secret_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("OPENAI_API_KEY");
    std::error_code ec;
    fs::remove_all(base_, ec);
  }
  fs::path base_;
  std::string env_secret_;
};

TEST_F(SandboxRoot, TheRunProfileReadsNoRootOnlyFileAndItsWorkspaceStillWorks) {
  PlantedUnderEtc planted;
  fs::path ws = base_ / "workspace";
  fs::create_directories(ws);
  LaunchSpec s;
  s.profile = Profile::kRun;
  s.isolation = Isolation::kSandbox;
  s.argv = {"/bin/sh", "-c",
            attack(planted) +
                "echo kept > made.txt && cat made.txt && echo tmp > /tmp/t && cat /tmp/t && "
                "echo workspace-ok"};
  s.writable = {ws};
  s.merge_stderr = true;
  LaunchResult r = launch(s);
  ASSERT_TRUE(r.started) << r.setup_error;
  expect_nothing_read(r.out, planted, env_secret_);
  EXPECT_NE(r.out.find("workspace-ok"), std::string::npos) << r.out;
  EXPECT_EQ(read_all(ws / "made.txt"), "kept\n");
  EXPECT_NE(r.out.find("uid=0"), std::string::npos) << "not root inside, nothing tried: " << r.out;
}

TEST_F(SandboxRoot, TheEvaluateProfileReadsNoRootOnlyFileAndItsFoldersStillWork) {
  PlantedUnderEtc planted;
  fs::path task = base_ / "task", cand = base_ / "cand";
  fs::create_directories(task);
  fs::create_directories(cand);
  std::ofstream(task / "spec.txt") << "task-visible\n";
  std::ofstream(cand / "kernel.py") << "candidate-visible\n";
  LaunchSpec s;
  s.profile = Profile::kEvaluate;
  s.isolation = Isolation::kSandbox;
  s.readable = {task, cand};
  s.cwd = task;
  s.argv = {"/bin/sh", "-c",
            attack(planted) + "cat spec.txt " + (cand / "kernel.py").string() +
                " && echo x > $HOME/made && cat $HOME/made && echo scratch-ok"};
  s.merge_stderr = true;
  LaunchResult r = launch(s);
  ASSERT_TRUE(r.started) << r.setup_error;
  expect_nothing_read(r.out, planted, env_secret_);
  for (const char* want : {"task-visible", "candidate-visible", "scratch-ok"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " missing: " << r.out;
  }
}

TEST(SandboxRootMasks, TheScanFindsWhatOnlyItsOwnerReadsAndDoesNotDescendIntoMaskedFolders) {
  fs::path root = fs::temp_directory_path() / token("marathon-scan-");
  fs::create_directories(root / "open" / "deep");
  fs::create_directories(root / "closed" / "inner");
  std::ofstream(root / "open" / "public.conf") << "x";
  std::ofstream(root / "open" / "deep" / "key") << "x";
  std::ofstream(root / "closed" / "inner" / "key") << "x";
  std::ofstream(root / "write-only") << "x";
  chmod((root / "open" / "deep" / "key").c_str(), 0600);
  chmod((root / "write-only").c_str(), 0200);
  chmod((root / "closed").c_str(), 0711);  // searchable, not listable: masked as a folder
  fs::create_symlink("/etc/shadow", root / "open" / "link");
  Masks m = scan_masks(root.string());
  std::error_code ec;
  chmod((root / "closed").c_str(), 0755);
  fs::remove_all(root, ec);
  EXPECT_EQ(joined(m.files), (root / "open" / "deep" / "key").string() + " ");
  EXPECT_EQ(joined(m.dirs), (root / "closed").string() + " ");
}

TEST(SandboxRootMasks, MaskedFilesAndFoldersComeAfterTheSystemBindsAndStayReadOnly) {
  HostLayout h;
  h.system_dirs = {"/usr", "/etc"};
  h.root = true;
  h.masks.files = {"/etc/shadow"};
  h.masks.dirs = {"/etc/ssl/private"};
  std::string a = joined(bwrap_args("bwrap", Mounts{}, h));
  size_t etc = a.find("--ro-bind /etc /etc");
  size_t file = a.find("--ro-bind /dev/null /etc/shadow");
  size_t dir = a.find("--tmpfs /etc/ssl/private --remount-ro /etc/ssl/private");
  ASSERT_NE(etc, std::string::npos) << a;
  ASSERT_NE(file, std::string::npos) << a;
  ASSERT_NE(dir, std::string::npos) << a;
  EXPECT_LT(etc, file);
  EXPECT_LT(etc, dir);
}

}  // namespace
}  // namespace marathon::sandbox
