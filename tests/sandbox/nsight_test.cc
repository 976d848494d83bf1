// Nsight Compute's install folders, found by the probe the evaluate profile binds read-only with,
// and the bubblewrap arguments that bind them (a profile runs the candidate under ncu inside).
#include "sandbox/nsight.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "sandbox/bwrap_args.h"

namespace marathon::sandbox {
namespace {

namespace fs = std::filesystem;

class FakeHost : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    root_ = fs::temp_directory_path() /
            ("marathon-nsight-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(root_);
    root_ = fs::canonical(root_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  // An install: ncu (executable) beside sections/ (or target/).
  fs::path install(const std::string& rel, const char* beside = "sections") {
    fs::path d = root_ / rel;
    fs::create_directories(d / beside);
    exe(d / "ncu");
    return d;
  }
  static void exe(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "#!/bin/sh\n";
    fs::permissions(p, fs::perms::owner_all);
  }
  fs::path root_;
};

TEST_F(FakeHost, FindsTheVersionFoldersUnderOptAndTheOneOnPath) {
  fs::path v1 = install("opt/nvidia/nsight-compute/2025.1.0");
  fs::path v2 = install("opt/nvidia/nsight-compute/2025.3.1", "target");
  fs::path own = install("tools/ncu-2024");
  fs::create_directories(root_ / "bin");
  fs::create_symlink(own / "ncu", root_ / "bin" / "ncu");  // ncu on PATH through a link
  auto dirs = nsight_compute_dirs("relative/bin:" + (root_ / "bin").string(), "",
                                  root_ / "opt/nvidia/nsight-compute");
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], own);
  EXPECT_EQ(dirs[1], v1);
  EXPECT_EQ(dirs[2], v2);
}

TEST_F(FakeHost, CudasWrapperIsNoInstallButTheFolderBesideTheToolkitIs) {
  fs::path cuda = root_ / "cuda";
  exe(cuda / "bin" / "ncu");  // the toolkit's wrapper script: no sections/ beside it
  fs::path beside = install("cuda/nsight-compute-2025.3.1");
  auto dirs = nsight_compute_dirs((cuda / "bin").string(), cuda.string(), root_ / "no-opt");
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(dirs[0], beside);
}

TEST_F(FakeHost, NoNsightComputeGivesNoFolder) {
  fs::create_directories(root_ / "opt/nvidia/nsight-compute/empty");
  EXPECT_TRUE(
      nsight_compute_dirs("/nonexistent", "/nonexistent", root_ / "opt/nvidia/nsight-compute")
          .empty());
}

TEST_F(FakeHost, TheFoldersFoundAreBoundReadOnlyIntoTheSandbox) {
  fs::path v = install("opt/nvidia/nsight-compute/2025.3.1");
  Mounts m;
  m.readable = nsight_compute_dirs("", "", root_ / "opt/nvidia/nsight-compute");
  m.gpu = true;
  HostLayout h;
  h.system_dirs = {"/usr", "/etc"};
  h.gpu_devices = {"/dev/nvidia0"};
  std::vector<std::string> a = bwrap_args("/usr/bin/bwrap", m, h);
  auto it = std::find(a.begin(), a.end(), v.string());
  ASSERT_NE(it, a.end());
  ASSERT_GT(it - a.begin(), 0);
  EXPECT_EQ(*(it - 1), "--ro-bind-try");
  ASSERT_NE(it + 1, a.end());
  EXPECT_EQ(*(it + 1), v.string());  // at its own path, where CUDA's wrapper looks for it
}

}  // namespace
}  // namespace marathon::sandbox
