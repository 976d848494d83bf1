// `run` in the sandbox's run profile: no network, no host file but the system and the workspace,
// timeout kills the whole tree, output capped for the model with its stored head and tail as a
// blob.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "sandbox/launcher.h"
#include "tools/tool_registry.h"
#include "tools/tool_run.h"
#include "tools_test_support.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;

class RunTool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = sandbox::sandbox_unavailable_reason(); !why.empty()) {
      GTEST_SKIP() << "bubblewrap cannot sandbox on this machine: " << why;
    }
    RunToolOptions o;
    o.output_cap = 1000;
    reg.add(make_run_tool(o));
  }
  ToolResult run(const std::string& command, double timeout_s = 60) {
    return reg.call_json("run", json{{"command", command}, {"timeout_s", timeout_s}}, w.ctx);
  }
  testing::TempWorkspace w;
  ToolRegistry reg;
};

// A TCP listener on 127.0.0.1 of the host; returns its port.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 16);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST_F(RunTool, CommandRunsInTheWorkspaceAndReportsItsExitCode) {
  w.write("in.txt", "hello\n");
  ToolResult r = run("cat in.txt && echo made > out.txt && pwd");
  ASSERT_TRUE(r.ok) << r.output;
  EXPECT_EQ(r.output.rfind("exit code 0", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("hello"), std::string::npos);
  EXPECT_NE(r.output.find(fs::canonical(w.ws()).string()), std::string::npos) << r.output;
  EXPECT_EQ(w.read(w.ws() / "out.txt"), "made\n");
  ToolResult fail = run("echo oops >&2; exit 3");
  EXPECT_FALSE(fail.ok);
  EXPECT_NE(fail.output.find("exit code 3"), std::string::npos);
  EXPECT_NE(fail.output.find("oops"), std::string::npos);
}

TEST_F(RunTool, NetworkIsUnreachableFromTheSandbox) {
  Listener host;
  std::string connect =
      "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(host.port()) + " && echo CONNECTED'";
  // The listener is reachable from outside the sandbox (so the refusal below means something).
  ASSERT_EQ(std::system((connect + " >/dev/null 2>&1").c_str()), 0);
  ToolResult r = run(connect);
  EXPECT_FALSE(r.ok) << r.output;
  EXPECT_EQ(r.output.find("CONNECTED"), std::string::npos) << r.output;
  ToolResult py = run("python3 -c \"import socket; socket.create_connection(('127.0.0.1', " +
                      std::to_string(host.port()) + "), timeout=5); print('CONNECTED')\"");
  EXPECT_FALSE(py.ok) << py.output;
  EXPECT_EQ(py.output.find("CONNECTED"), std::string::npos) << py.output;
}

TEST_F(RunTool, OnlyTheWorkspaceAndAPrivateTmpAreWritable) {
  // A host folder outside /tmp (the sandbox's /tmp is a private tmpfs): absent in the sandbox,
  // whose root is read-only.
  fs::path host = fs::path("/var/tmp") / ("marathon-sandbox-" + std::to_string(getpid()));
  fs::create_directories(host);
  ToolResult r = run("mkdir -p " + host.string() + " && touch " + (host / "escaped").string());
  bool escaped = fs::exists(host / "escaped");
  fs::remove_all(host);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(escaped);
  EXPECT_NE(r.output.find("Read-only file system"), std::string::npos) << r.output;
  ToolResult usr = run("touch /usr/marathon-escape");
  EXPECT_FALSE(usr.ok);
  EXPECT_FALSE(fs::exists("/usr/marathon-escape"));
  std::string marker = "marathon-private-tmp-" + std::to_string(getpid());
  ToolResult tmp = run("echo x > /tmp/" + marker + " && cat /tmp/" + marker);
  EXPECT_TRUE(tmp.ok) << tmp.output;
  EXPECT_FALSE(fs::exists("/tmp/" + marker));
}

TEST_F(RunTool, SecretsInTheEnvironmentDoNotReachTheSandbox) {
  setenv("OPENAI_API_KEY", "sk-should-not-leak", 1);
  ToolResult r = run("echo key=${OPENAI_API_KEY:-unset}; cat /proc/1/environ /proc/*/environ");
  unsetenv("OPENAI_API_KEY");
  EXPECT_NE(r.output.find("key=unset"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("sk-should-not-leak"), std::string::npos) << r.output;
}

TEST_F(RunTool, HostFilesOutsideTheWorkspaceAreNotThere) {
  std::ofstream(w.outside() / "events.db") << "runner-private-bytes\n";
  ToolResult r = run("cat " + (w.outside() / "events.db").string() + "; ls " +
                     w.outside().string() + "; ls /root /home 2>&1; exit 0");
  EXPECT_EQ(r.output.find("runner-private-bytes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("No such file or directory"), std::string::npos) << r.output;
}

bool process_with_marker_exists(const std::string& marker) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    if (cmd.find(marker) != std::string::npos) return true;
  }
  return false;
}

TEST_F(RunTool, TimeoutKillsTheWholeTreeIncludingADetachedGrandchild) {
  // Unique sleep lengths mark the processes so the test can look for them afterwards.
  std::string child = "1000." + std::to_string(getpid() % 100000) + "1";
  std::string grandchild = "1000." + std::to_string(getpid() % 100000) + "2";
  ToolResult r = run(
      "sh -c 'setsid sleep " + grandchild + " > /dev/null 2>&1 & sleep " + child + "' & wait", 2);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("timed out after 2 s"), std::string::npos) << r.output;
  // The kernel tears the PID namespace down asynchronously: allow it a moment, generously.
  bool alive = true;
  for (int i = 0; i < 200 && alive; ++i) {
    alive = process_with_marker_exists("sleep " + child) ||
            process_with_marker_exists("sleep " + grandchild);
    if (alive) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(alive) << "a process of the timed-out command survived";
}

TEST_F(RunTool, LongOutputIsCappedHeadAndTailWithTheRestInABlob) {
  ToolResult r = run("seq 1 2000");  // 8893 bytes: over the view, under what is stored
  ASSERT_TRUE(r.ok) << r.output.substr(0, 200);
  ASSERT_FALSE(r.full_output_sha.empty());
  const std::string& full = w.blobs.at(r.full_output_sha);
  EXPECT_EQ(full.size(), 8893u);
  EXPECT_EQ(full.substr(0, 4), "1\n2\n");
  EXPECT_EQ(full.substr(full.size() - 5), "2000\n");
  EXPECT_LT(r.output.size(), 1300u);
  EXPECT_NE(r.output.find("\n1\n2\n"), std::string::npos);
  EXPECT_NE(r.output.find("1999\n2000\n"), std::string::npos);
  EXPECT_NE(r.output.find("full output kept as blob " + r.full_output_sha), std::string::npos);
  ToolResult small = run("echo short");
  EXPECT_TRUE(small.full_output_sha.empty());
}

TEST_F(RunTool, HugeOutputIsStoredAsItsHeadAndTailAndItsSize) {
  // 20 MB of output: what is stored is bounded whatever the command writes.
  ToolResult r = run("head -c 20000000 /dev/zero | tr '\\0' x; echo; echo last-line");
  ASSERT_TRUE(r.ok) << r.output.substr(0, 300);
  ASSERT_FALSE(r.full_output_sha.empty());
  const std::string& kept = w.blobs.at(r.full_output_sha);
  EXPECT_LE(kept.size(), 64u * 1024 + 200) << "stored more than the head and tail";
  EXPECT_EQ(kept.substr(0, 10), "xxxxxxxxxx");
  EXPECT_EQ(kept.substr(kept.size() - 10), "last-line\n");
  EXPECT_NE(kept.find("bytes not kept"), std::string::npos);
  EXPECT_NE(r.output.find("of 20000011 bytes not shown"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("head and tail kept as blob"), std::string::npos) << r.output;
}

TEST(Sandbox, MissingBwrapIsAClearErrorAndNothingRunsUnsandboxed) {
  testing::TempWorkspace w;
  RunToolOptions o;
  o.bwrap = "/nonexistent/bwrap";
  ToolRegistry reg;
  reg.add(make_run_tool(o));
  ToolResult r = reg.call_json("run", json{{"command", "touch ran"}}, w.ctx);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("cannot create the sandbox"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("unsandboxed"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(w.ws() / "ran"));
}

TEST(Sandbox, UnsandboxedRunStillClearsTheEnvironment) {
  testing::TempWorkspace w;
  RunToolOptions o;
  o.isolation = sandbox::Isolation::kNone;
  ToolRegistry reg;
  reg.add(make_run_tool(o));
  setenv("OPENAI_API_KEY", "sk-unsandboxed-leak", 1);
  ToolResult r = reg.call_json("run", json{{"command", "env; pwd"}}, w.ctx);
  unsetenv("OPENAI_API_KEY");
  EXPECT_TRUE(r.ok) << r.output;
  EXPECT_EQ(r.output.find("sk-unsandboxed-leak"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("HOME=" + w.ws().string()), std::string::npos) << r.output;
}

TEST(CapOutput, KeepsHeadAndTailAndCountsWhatIsLeftOut) {
  std::string out(100, 'a');
  out += std::string(100, 'b');
  std::string c = cap_output(out, out.size(), 20, "abc");
  EXPECT_EQ(c, std::string(10, 'a') +
                   "\n[... 180 of 200 bytes not shown; full output kept as blob abc ...]\n" +
                   std::string(10, 'b'));
  EXPECT_EQ(cap_output("short", 5, 20, ""), "short");
}

}  // namespace
}  // namespace marathon
