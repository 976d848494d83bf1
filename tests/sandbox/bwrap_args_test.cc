// The bubblewrap command line: what is bound, how, and in which order.
#include "sandbox/bwrap_args.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace marathon::sandbox {
namespace {

HostLayout layout() {
  HostLayout h;
  h.system_dirs = {"/usr", "/etc"};
  h.symlinks = {{"/bin", "usr/bin"}, {"/lib", "usr/lib"}};
  h.gpu_devices = {"/dev/nvidia0", "/dev/nvidiactl"};
  return h;
}

std::string joined(const std::vector<std::string>& a) {
  std::string s;
  for (const auto& x : a) s += x + " ";
  return s;
}

size_t at(const std::string& s, const std::string& what) {
  size_t p = s.find(what);
  EXPECT_NE(p, std::string::npos) << what << " not in: " << s;
  return p;
}

TEST(BwrapArgs, NoHostRootNoNetworkOwnPidNamespaceAndOnlyTheWorkspaceWritable) {
  Mounts m;
  m.writable = {"/data/run/workspace/"};
  m.readable = {"/opt/venv"};
  m.cwd = "/data/run/workspace";
  std::string a = joined(bwrap_args("/usr/bin/bwrap", m, layout()));
  EXPECT_EQ(a.find("--ro-bind / /"), std::string::npos) << a;
  EXPECT_EQ(a.find("--bind / "), std::string::npos) << a;
  for (const char* flag :
       {"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
        "--new-session", "--proc /proc", "--dev /dev", "--tmpfs /tmp", "--ro-bind /usr /usr",
        "--ro-bind /etc /etc", "--symlink usr/bin /bin", "--ro-bind-try /opt/venv /opt/venv",
        "--bind /data/run/workspace /data/run/workspace",
        "--remount-ro / --chdir /data/run/workspace -- "}) {
    at(a, flag);
  }
  EXPECT_EQ(a.find("nvidia"), std::string::npos) << "no GPU asked for: " << a;
  EXPECT_EQ(a.find("/sys"), std::string::npos) << a;
  EXPECT_EQ(std::count(a.begin(), a.end(), '\n'), 0);
}

TEST(BwrapArgs, GpuBindsTheDeviceNodesAndSysReadOnly) {
  Mounts m;
  m.gpu = true;
  std::string a = joined(bwrap_args("bwrap", m, layout()));
  at(a, "--dev /dev");
  EXPECT_LT(at(a, "--dev /dev"), at(a, "--dev-bind-try /dev/nvidia0 /dev/nvidia0"));
  at(a, "--dev-bind-try /dev/nvidiactl /dev/nvidiactl");
  at(a, "--ro-bind-try /sys /sys");
  HostLayout none = layout();
  none.gpu_devices.clear();
  EXPECT_EQ(joined(bwrap_args("bwrap", m, none)).find("/sys"), std::string::npos);
}

TEST(BwrapArgs, AReadOnlyFolderInsideAWritableOneIsBoundAfterItAndTmpComesFirst) {
  Mounts m;
  m.writable = {"/tmp/x/scratch", "/tmp/x"};
  m.readable = {"/tmp/x/task", "/usr/lib/python3", "/bin/sh-dir", "/tmp/x"};
  std::string a = joined(bwrap_args("bwrap", m, layout()));
  size_t tmp = at(a, "--tmpfs /tmp");
  size_t parent = at(a, "--bind /tmp/x /tmp/x");
  size_t task = at(a, "--ro-bind-try /tmp/x/task /tmp/x/task");
  size_t scratch = at(a, "--bind /tmp/x/scratch /tmp/x/scratch");
  EXPECT_LT(tmp, parent);
  EXPECT_LT(parent, task);
  EXPECT_LT(parent, scratch);
  EXPECT_EQ(a.find("--ro-bind-try /tmp/x /tmp/x"), std::string::npos) << "writable wins: " << a;
  EXPECT_EQ(a.find("/usr/lib/python3"), std::string::npos) << "already under /usr: " << a;
  EXPECT_EQ(a.find("/bin/sh-dir"), std::string::npos) << "under the /bin link: " << a;
}

TEST(BwrapArgs, RootKeepsNoCapabilityInside) {
  HostLayout h = layout();
  h.root = true;
  at(joined(bwrap_args("bwrap", Mounts{}, h)), "--cap-drop ALL");
  EXPECT_EQ(joined(bwrap_args("bwrap", Mounts{}, layout())).find("--cap-drop"), std::string::npos);
}

}  // namespace
}  // namespace marathon::sandbox
