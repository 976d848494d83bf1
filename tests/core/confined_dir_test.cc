// ConfinedDir against a real file system, the way a hostile model would plant things in the
// workspace: links out (file, folder, dangling, absolute, climbing with ".."), FIFOs, sockets and
// devices. Every test runs with both resolvers: openat2 (where the kernel has it) and the
// component walk. A host folder beside the workspace stands for the machine's files.
#include "core/confined_dir.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>

namespace marathon {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// Fails the test (SIGALRM ends the binary) instead of hanging when an operation blocks.
class AlarmGuard {
 public:
  explicit AlarmGuard(unsigned seconds) { ::alarm(seconds); }
  ~AlarmGuard() { ::alarm(0); }
};

class ConfinedDirTest : public ::testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    if (GetParam() == Resolver::kOpenat2 && !ConfinedDir::kernel_has_openat2()) {
      GTEST_SKIP() << "this kernel has no openat2; the walk resolver covers it";
    }
    std::random_device rd;
    base_ = fs::temp_directory_path() /
            ("marathon-confined-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(ws());
    fs::create_directories(host());
    put(host() / "secret.txt", "host secret");
    auto d = ConfinedDir::open(ws(), GetParam());
    ASSERT_TRUE(d.ok()) << d.error().message();
    dir_.emplace(std::move(d.value()));
    ASSERT_EQ(dir_->uses_openat2(), GetParam() == Resolver::kOpenat2);
  }
  void TearDown() override {
    std::error_code ec;
    if (!base_.empty()) fs::remove_all(base_, ec);
  }
  fs::path ws() const { return base_ / "ws"; }
  fs::path host() const { return base_ / "host"; }
  const ConfinedDir& d() const { return *dir_; }
  // The host folder's files and contents, to compare before and after.
  std::map<std::string, std::string> host_snapshot() const {
    std::map<std::string, std::string> out;
    for (auto& e : fs::recursive_directory_iterator(host())) {
      out[fs::relative(e.path(), host()).string()] =
          e.is_symlink() ? "link" : (e.is_regular_file() ? slurp(e.path()) : "dir");
    }
    return out;
  }

  fs::path base_;
  std::optional<ConfinedDir> dir_;
};

TEST_P(ConfinedDirTest, ReadWriteAndStatOfPlainFiles) {
  auto w = d().write("src/k.cc", "int x;\n");
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(*w, "src/k.cc");
  EXPECT_EQ(slurp(ws() / "src/k.cc"), "int x;\n");
  auto r = d().read("src/k.cc", 100);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, "int x;\n");
  auto s = d().stat("src/k.cc");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, EntryKind::kFile);
  EXPECT_EQ(s->size, 7u);
  EXPECT_EQ(d().stat("nope")->kind, EntryKind::kMissing);
  auto missing = d().read("nope", 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(), "nope: no such file");
  auto big = d().read("src/k.cc", 3);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().reason.find("more than the limit of 3"), std::string::npos);
}

TEST_P(ConfinedDirTest, AFileLinkOutIsNeitherReadNorWrittenThrough) {
  fs::create_symlink(host() / "secret.txt", ws() / "kernel.cc");
  auto before = host_snapshot();
  auto r = d().read("kernel.cc", 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().reason.find("outside the workspace"), std::string::npos)
      << r.error().message();
  EXPECT_FALSE(d().write("kernel.cc", "pwned").ok());
  // Putting back a logged file replaces the link itself, never the file it points to.
  auto w = d().write("kernel.cc", "restored", WriteLinks::kReplace);
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_FALSE(fs::is_symlink(ws() / "kernel.cc"));
  EXPECT_EQ(slurp(ws() / "kernel.cc"), "restored");
  EXPECT_EQ(host_snapshot(), before);
}

TEST_P(ConfinedDirTest, ADirLinkOutGetsNoFileCreatedInTheHostFolder) {
  fs::create_symlink(host(), ws() / "sub");
  auto before = host_snapshot();
  auto w = d().write("sub/planted.txt", "pwned");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().reason.find("outside the workspace"), std::string::npos);
  EXPECT_FALSE(d().read("sub/secret.txt", 100).ok());
  EXPECT_FALSE(d().mkdirs("sub/new").ok());
  auto replaced = d().write("sub/planted.txt", "log bytes", WriteLinks::kReplace);
  ASSERT_TRUE(replaced.ok()) << replaced.error().message();
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(ws() / "sub")));
  EXPECT_EQ(slurp(ws() / "sub/planted.txt"), "log bytes");
  EXPECT_EQ(host_snapshot(), before);
  EXPECT_FALSE(fs::exists(host() / "planted.txt"));
}

TEST_P(ConfinedDirTest, DanglingLinksOutAreRefusedAndInsideOnesWriteTheirTarget) {
  fs::create_symlink(host() / "new.txt", ws() / "abs_dangling");
  fs::create_symlink("../host/new2.txt", ws() / "rel_dangling");
  fs::create_symlink("later/made.txt", ws() / "in_dangling");
  EXPECT_FALSE(d().write("abs_dangling", "x").ok());
  EXPECT_FALSE(d().write("rel_dangling", "x").ok());
  EXPECT_FALSE(fs::exists(host() / "new.txt"));
  EXPECT_FALSE(fs::exists(host() / "new2.txt"));
  auto in = d().write("in_dangling", "inside");
  ASSERT_TRUE(in.ok()) << in.error().message();
  EXPECT_EQ(*in, "later/made.txt");
  EXPECT_EQ(slurp(ws() / "later/made.txt"), "inside");
}

TEST_P(ConfinedDirTest, DotDotAndAbsolutePathsAreRefused) {
  for (const char* p : {"../host/secret.txt", "a/../../host/secret.txt", "..", "/etc/passwd"}) {
    EXPECT_FALSE(d().read(p, 100).ok()) << p;
    EXPECT_FALSE(d().write(p, "x").ok()) << p;
    EXPECT_FALSE(d().write(p, "x", WriteLinks::kReplace).ok()) << p;
    EXPECT_FALSE(d().remove(p).ok()) << p;
    EXPECT_FALSE(d().remove_all(p).ok()) << p;
  }
  EXPECT_EQ(slurp(host() / "secret.txt"), "host secret");
}

TEST_P(ConfinedDirTest, ALinkWhoseTargetStaysInsideIsFollowed) {
  put(ws() / "real/k.py", "v = 1\n");
  fs::create_symlink("real", ws() / "alias");
  fs::create_directories(ws() / "sub");
  fs::create_symlink("../real/k.py", ws() / "sub/up");
  auto r = d().read("sub/up", 100);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, "v = 1\n");
  auto w = d().write("alias/k.py", "v = 2\n");
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(*w, "real/k.py");
  EXPECT_TRUE(fs::is_symlink(ws() / "alias"));
  EXPECT_EQ(slurp(ws() / "real/k.py"), "v = 2\n");
  EXPECT_EQ(d().stat("alias")->path, "real");
}

TEST_P(ConfinedDirTest, AnAbsoluteLinkIsRefusedEvenWhenItPointsInside) {
  put(ws() / "real.txt", "r");
  fs::create_symlink(ws() / "real.txt", ws() / "abs");
  auto r = d().read("abs", 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().reason.find("absolute path"), std::string::npos);
}

TEST_P(ConfinedDirTest, AFifoIsRefusedAtOnceForReadingAndReplacedForWriting) {
  ASSERT_EQ(::mkfifo((ws() / "pipe").c_str(), 0644), 0);
  fs::create_symlink("pipe", ws() / "to_pipe");
  AlarmGuard guard(20);
  auto r = d().read("pipe", 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().reason.find("is a FIFO, not a regular file"), std::string::npos)
      << r.error().message();
  EXPECT_FALSE(d().read("to_pipe", 100).ok());
  auto w = d().write("pipe", "now a file");
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(slurp(ws() / "pipe"), "now a file");
}

TEST_P(ConfinedDirTest, ASocketIsRefused) {
  int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string p = (ws() / "sock").string();
  ASSERT_LT(p.size(), sizeof addr.sun_path);
  std::strncpy(addr.sun_path, p.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  AlarmGuard guard(20);
  auto r = d().read("sock", 100);
  ::close(s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().reason.find("socket"), std::string::npos) << r.error().message();
}

TEST_P(ConfinedDirTest, ADeviceFileIsRefusedWithoutOpeningIt) {
  // /dev/zero's numbers: opened and read, it would never end.
  if (::mknod((ws() / "zero").c_str(), S_IFCHR | 0644, makedev(1, 5)) != 0) {
    GTEST_SKIP() << "cannot create a device node here (mknod: " << std::strerror(errno) << ")";
  }
  AlarmGuard guard(20);
  auto r = d().read("zero", 1 << 30);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().reason.find("character device"), std::string::npos) << r.error().message();
}

TEST_P(ConfinedDirTest, RemovingALinkLeavesItsTarget) {
  fs::create_symlink(host() / "secret.txt", ws() / "file_link");
  fs::create_symlink(host(), ws() / "dir_link");
  auto before = host_snapshot();
  auto f = d().remove("file_link");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_TRUE(*f);
  auto dl = d().remove("dir_link");
  ASSERT_TRUE(dl.ok()) << dl.error().message();
  EXPECT_FALSE(fs::exists(fs::symlink_status(ws() / "file_link")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(ws() / "dir_link")));
  EXPECT_EQ(host_snapshot(), before);
}

TEST_P(ConfinedDirTest, RemovingAPathThroughADirLinkRemovesNothingOutside) {
  fs::create_symlink(host(), ws() / "sub");
  auto r = d().remove("sub/secret.txt");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_FALSE(*r);
  auto all = d().remove_all("sub/secret.txt");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, 0u);
  EXPECT_EQ(slurp(host() / "secret.txt"), "host secret");
}

TEST_P(ConfinedDirTest, RemoveAllOfATreeWithLinksOutDeletesOnlyTheTree) {
  put(ws() / "tree/a.txt", "a");
  put(ws() / "tree/deep/b.txt", "b");
  fs::create_symlink(host(), ws() / "tree/deep/out");
  fs::create_symlink(host() / "secret.txt", ws() / "tree/s");
  auto before = host_snapshot();
  auto r = d().remove_all("tree");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, 6u);
  EXPECT_FALSE(fs::exists(ws() / "tree"));
  EXPECT_EQ(host_snapshot(), before);
  EXPECT_FALSE(d().remove("missing").value());
}

TEST_P(ConfinedDirTest, WalkListsLinksAsLinksAndNeverEntersThem) {
  put(ws() / "a.txt", "abc");
  put(ws() / "sub/b.txt", "");
  fs::create_symlink(host(), ws() / "out");
  ::mkfifo((ws() / "p").c_str(), 0644);
  std::vector<std::string> seen;
  auto n = d().walk(".", [&](const FileInfo& f) {
    seen.push_back(f.path + ":" + describe(f.kind) +
                   (f.kind == EntryKind::kLink ? "->" + f.link_target : ""));
    return true;
  });
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(seen,
            (std::vector<std::string>{"a.txt:regular file", "out:symbolic link->" + host().string(),
                                      "p:FIFO", "sub:folder", "sub/b.txt:regular file"}));
  EXPECT_FALSE(d().walk("out", [](const FileInfo&) { return true; }).ok());
}

TEST_P(ConfinedDirTest, AWriteKeepsTheModeAndLeavesAHardLinkedCopyAlone) {
  put(ws() / "run.sh", "#!/bin/sh\n");
  fs::permissions(ws() / "run.sh", fs::perms(0755));
  fs::create_hard_link(ws() / "run.sh", host() / "hard");
  ASSERT_TRUE(d().write("run.sh", "#!/bin/sh\necho hi\n").ok());
  EXPECT_EQ(fs::status(ws() / "run.sh").permissions() & fs::perms::all, fs::perms(0755));
  EXPECT_EQ(slurp(host() / "hard"), "#!/bin/sh\n");
  std::vector<std::string> left;
  for (auto& e : fs::directory_iterator(ws())) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"run.sh"}) << "a temporary file was left behind";
}

TEST_P(ConfinedDirTest, AFolderIsNeitherReadNorWrittenOverAndNotRemovedByRemove) {
  fs::create_directories(ws() / "d/e");
  EXPECT_EQ(d().read("d", 100).error().reason, "is a folder");
  EXPECT_EQ(d().write("d", "x").error().reason, "is a folder");
  EXPECT_EQ(d().write("d", "x", WriteLinks::kReplace).error().reason, "is a folder");
  EXPECT_EQ(d().remove("d").error().reason, "is a folder");
  EXPECT_TRUE(fs::is_directory(ws() / "d/e"));
}

TEST_P(ConfinedDirTest, AReplacingWriteRefusesARegularFileInMidPath) {
  put(ws() / "a", "file");
  auto w = d().write("a/b", "x", WriteLinks::kReplace);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().reason.find("'a' is not a folder"), std::string::npos) << w.error().message();
  EXPECT_EQ(slurp(ws() / "a"), "file");
}

INSTANTIATE_TEST_SUITE_P(Resolvers, ConfinedDirTest,
                         ::testing::Values(Resolver::kOpenat2, Resolver::kWalk),
                         [](const auto& info) {
                           return info.param == Resolver::kOpenat2 ? "openat2" : "walk";
                         });

TEST(ConfinedDirOpen, AMissingRootIsAnErrorNamingIt) {
  auto d = ConfinedDir::open("/nonexistent/workspace");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("/nonexistent/workspace"), std::string::npos);
}

}  // namespace
}  // namespace marathon
