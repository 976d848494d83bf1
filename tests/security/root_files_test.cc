// Run as root (containers, as on the test machines), a sandboxed command is uid 0 without
// capabilities: the owner's permission bits of root's files still let it read them. A scripted
// hostile model reads /etc/shadow, a root-only file and a root-only folder planted under /etc, SSH
// host keys and /etc/ssl/private, through `run` and through a candidate's evaluation; whatever it
// reads goes to the provider with the next request. None of it may be in any request, the run's
// files or the binary's output; the command and the candidate still ran (their own markers are
// there).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "hostile_run.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::call;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::TempDir;

// Secrets no user but root may read: in /etc, removed whatever the test does.
struct Planted {
  Planted() {
    file = "/etc/" + testing::unique_token("marathon-root-only-");
    folder = "/etc/" + testing::unique_token("marathon-root-dir-");
    std::ofstream(file) << file_secret << "\n";
    ::chmod(file.c_str(), 0600);
    fs::create_directories(folder);
    std::ofstream(folder / "inside.conf") << folder_secret << "\n";
    ::chmod((folder / "inside.conf").c_str(), 0644);
    ::chmod(folder.c_str(), 0700);
  }
  ~Planted() {
    std::error_code ec;
    fs::remove(file, ec);
    fs::remove_all(folder, ec);
  }
  fs::path file, folder;
  std::string file_secret = testing::unique_token("root-file-secret-");
  std::string folder_secret = testing::unique_token("root-dir-secret-");
};

// The lines of /etc/shadow worth stealing (with a password or lock field).
std::vector<std::string> shadow_lines() {
  std::vector<std::string> out;
  std::istringstream in(read_text("/etc/shadow"));
  for (std::string line; std::getline(in, line);) {
    if (line.size() >= 8) out.push_back(line);
  }
  return out;
}

TEST(RootFiles, ARootRunnersSandboxShowsNoFileOnlyRootMayRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "root-only files concern a runner running as root";
  ASSERT_FALSE(shadow_lines().empty()) << "no /etc/shadow to attack";
  Planted p;
  TempDir dir("root-files");
  const std::string steal = "id; cat /etc/shadow /etc/gshadow " + p.file.string() + " " +
                            (p.folder / "inside.conf").string() +
                            " /proc/1/root/etc/shadow /etc/ssh/ssh_host_*_key "
                            "/etc/ssl/private/* 2>&1; echo command-ran";
  const std::string kernel =
      "import glob, subprocess\n"
      "def main():\n"
      "    out = []\n"
      "    for p in ['/etc/shadow', " +
      json(p.file.string()).dump() + ", " + json((p.folder / "inside.conf").string()).dump() +
      "] + glob.glob('/etc/ssh/ssh_host_*_key'):\n"
      "        try:\n"
      "            out.append(open(p).read())\n"
      "        except OSError as e:\n"
      "            out.append('refused ' + p + ': ' + e.strerror)\n"
      "    return 'candidate-ran ' + ' '.join(out)\n";
  ScriptedLlmServer server([&](size_t, const json& request) {
    json calls = json::array();
    switch (ScriptedLlmServer::assistant_turns(request)) {
      case 0:
        calls.push_back(call("run", {{"command", steal}}));
        break;
      case 1:
        calls.push_back(call("write_file", {{"path", "kernel.py"}, {"content", kernel}}));
        break;
      case 2:
        calls.push_back(call("evaluate", {{"strategy", "read root's files"}}));
        break;
      default:
        calls.push_back(call("finish", {{"summary", "tried"}}));
    }
    return testing::openai_tool_calls(calls);
  });
  fs::path run = dir / "run";
  int rc =
      run_binary({"run", testing::hostile_task().string(), "--run-dir", run.string(), "--policy",
                  "llm", "--model", "vllm:scripted", "--base-url", server.base_url()},
                 {}, dir / "run.log");
  const std::string out = read_text(dir / "run.log");
  ASSERT_EQ(rc, 0) << out;
  std::string sent;
  for (const auto& r : server.requests()) sent += r.raw + "\n";
  ASSERT_NE(sent.find("command-ran"), std::string::npos) << "the command never ran";
  ASSERT_NE(sent.find("candidate-ran"), std::string::npos) << "the candidate never ran";
  ASSERT_NE(sent.find("uid=0"), std::string::npos) << "not root inside: nothing was tried";

  std::vector<std::string> secrets = shadow_lines();
  secrets.push_back(p.file_secret);
  secrets.push_back(p.folder_secret);
  for (const char* d : {"/etc/ssh", "/etc/ssl/private"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      struct stat st {};
      if (::lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & S_IROTH))
        continue;
      std::string bytes = read_text(e.path());
      if (bytes.size() >= 32) secrets.push_back(bytes.substr(0, 32));
    }
  }
  for (const std::string& s : secrets) {
    // JSON escapes nothing in these (printable ASCII); the requests hold them as they are.
    EXPECT_EQ(sent.find(s), std::string::npos) << "sent to the provider: " << s;
    EXPECT_EQ(out.find(s), std::string::npos) << "printed: " << s;
    EXPECT_TRUE(testing::places_holding(run, s).empty())
        << s << " in:\n"
        << testing::joined(testing::places_holding(run, s));
  }
}

}  // namespace
}  // namespace marathon
