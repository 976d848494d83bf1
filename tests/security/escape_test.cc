// A hostile model and a hostile candidate try to get out: write outside their folders (a decoy in
// the test's folder, the runner's $HOME, the task folder), reach the network (the provider's own
// port on loopback), and leave processes behind (setsid'd loops that keep writing a marker). Each
// attempt must fail or die with its sandbox: checked while the run goes on (right after the tool
// call that made them) and after it.
#include <gtest/gtest.h>

#include <mutex>

#include "hostile_run.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::call;
using testing::events_of_type;
using testing::load_events;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::TempDir;

struct Attack {
  fs::path decoy;         // a folder of the test's, outside everything the run may write
  fs::path home;          // marathon's $HOME
  std::string run_mark;   // in the command lines of what the `run` command leaves behind
  std::string eval_mark;  // in the command lines of what the candidate leaves behind
  int port = 0;           // the scripted provider's port on 127.0.0.1
};

// Python: the candidate. Writes everywhere it should not, forks detached loops, tries the network.
std::string escaping_kernel(const Attack& a) {
  return "import os, socket, subprocess\n"
         "DECOY = " +
         json(a.decoy.string()).dump() +
         "\n"
         "HOME = " +
         json(a.home.string()).dump() +
         "\n"
         "TASK = " +
         json(testing::hostile_task().string()).dump() +
         "\n"
         "MARK = " +
         json(a.eval_mark).dump() +
         "\n"
         "def main():\n"
         "    out = []\n"
         "    for p in [DECOY + '/from-candidate', HOME + '/from-candidate',\n"
         "              TASK + '/from-candidate', os.environ['HOME'] + '/scratch-ok']:\n"
         "        try:\n"
         "            open(p, 'w').write('escaped')\n"
         "            out.append('wrote ' + p)\n"
         "        except OSError as e:\n"
         "            out.append('refused ' + p + ': ' + e.strerror)\n"
         "    loop = 'while true; do echo alive >> ' + DECOY + '/alive-candidate; sleep 0.2; done; "
         ": ' + MARK\n"
         "    subprocess.Popen(['setsid', 'sh', '-c', loop], start_new_session=True,\n"
         "                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,\n"
         "                     stderr=subprocess.DEVNULL)\n"
         "    if os.fork() == 0:\n"
         "        os.setsid()\n"
         "        os.execvp('sh', ['sh', '-c', loop])\n"
         "    try:\n"
         "        socket.create_connection(('127.0.0.1', " +
         std::to_string(a.port) +
         "), timeout=5)\n"
         "        out.append('network reached')\n"
         "    except OSError as e:\n"
         "        out.append('no network: ' + str(e))\n"
         "    return '\\n'.join(out)\n";
}

std::string escaping_command(const Attack& a) {
  std::string loop = "while true; do echo alive >> " + (a.decoy / "alive-run").string() +
                     "; sleep 0.2; done; : " + a.run_mark;
  return "touch " + (a.decoy / "from-run").string() + "; echo x > " +
         (a.home / "from-run").string() + "; setsid sh -c '" + loop +
         "' >/dev/null 2>&1 & (exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(a.port) +
         " && echo network-reached) 2>/dev/null; bash -c 'exec 3<>/dev/tcp/127.0.0.1/" +
         std::to_string(a.port) + " && echo network-reached' 2>/dev/null; exit 0";
}

TEST(Escape, HostileCommandAndCandidateWriteNothingOutsideReachNoNetworkAndLeaveNoProcess) {
  TempDir dir("escape");
  Attack a;
  a.decoy = dir / "decoy";
  a.home = dir / "home";
  fs::create_directories(a.decoy);
  fs::create_directories(a.home);
  a.run_mark = testing::unique_token("mark-run-");
  a.eval_mark = testing::unique_token("mark-eval-");

  std::mutex mu;
  std::vector<std::string> after_run, after_eval;  // survivors seen while the run went on
  int port = 0;
  ScriptedLlmServer server([&](size_t, const json& request) {
    size_t turn = ScriptedLlmServer::assistant_turns(request);
    json calls = json::array();
    Attack attack;
    {
      std::lock_guard<std::mutex> lock(mu);
      attack = a;
      attack.port = port;
    }
    switch (turn) {
      case 0:
        calls.push_back(call("run", {{"command", escaping_command(attack)}}));
        break;
      case 1: {
        std::vector<std::string> left = testing::survivors(attack.run_mark);
        std::lock_guard<std::mutex> lock(mu);
        after_run = left;
        calls.push_back(
            call("write_file", {{"path", "kernel.py"}, {"content", escaping_kernel(attack)}}));
        break;
      }
      case 2:
        calls.push_back(call("evaluate", {{"strategy", "get out"}}));
        break;
      case 3: {
        std::vector<std::string> left = testing::survivors(attack.eval_mark);
        std::lock_guard<std::mutex> lock(mu);
        after_eval = left;
        calls.push_back(call("finish", {{"summary", "tried"}}));
        break;
      }
      default:
        calls.push_back(call("finish", {{"summary", "tried"}}));
    }
    return testing::openai_tool_calls(calls);
  });
  {
    std::lock_guard<std::mutex> lock(mu);
    port = server.port();
  }

  fs::path run = dir / "run";
  std::map<std::string, std::string> env{{"HOME", a.home.string()}};
  int rc =
      run_binary({"run", testing::hostile_task().string(), "--run-dir", run.string(), "--policy",
                  "llm", "--model", "vllm:scripted", "--base-url", server.base_url(), "--quiet"},
                 env, dir / "run.log");
  ASSERT_EQ(rc, 0) << read_text(dir / "run.log");

  std::vector<Event> events = load_events(run);
  std::string run_output, eval_log;
  for (const Event& e : events_of_type(events, events::ToolFinished::kType)) {
    if (e.payload.value("name", "") == "run") run_output = e.payload.value("output", "");
  }
  std::vector<Event> evals = events_of_type(events, events::EvalFinished::kType);
  ASSERT_EQ(evals.size(), 1u);
  eval_log = evals[0].payload["result"].value("log", "");

  // The candidate ran (it wrote its scratch folder) and was refused everything else.
  EXPECT_NE(eval_log.find("/scratch-ok"), std::string::npos) << eval_log;
  EXPECT_EQ(eval_log.find("wrote " + a.decoy.string()), std::string::npos) << eval_log;
  EXPECT_EQ(eval_log.find("wrote " + a.home.string()), std::string::npos) << eval_log;
  EXPECT_EQ(eval_log.find("wrote " + testing::hostile_task().string()), std::string::npos)
      << eval_log;
  EXPECT_NE(eval_log.find("no network"), std::string::npos) << eval_log;
  EXPECT_EQ(eval_log.find("network reached"), std::string::npos) << eval_log;
  EXPECT_EQ(run_output.find("network-reached"), std::string::npos) << run_output;

  // Nothing appeared outside: not in the decoy, marathon's $HOME or the task folder.
  for (const fs::path& p :
       {a.decoy / "from-candidate", a.decoy / "from-run", a.home / "from-candidate",
        a.home / "from-run", testing::hostile_task() / "from-candidate"}) {
    EXPECT_FALSE(fs::exists(p)) << p << " was written from inside the sandbox";
    fs::remove(p);
  }

  // Every detached loop died with its sandbox, right after its tool call, and none is left now.
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(after_run.empty()) << "left by `run`:\n" << testing::joined(after_run);
    EXPECT_TRUE(after_eval.empty()) << "left by the candidate:\n" << testing::joined(after_eval);
  }
  std::vector<std::string> left = testing::survivors(a.run_mark, 1);
  for (const std::string& p : testing::survivors(a.eval_mark, 1)) left.push_back(p);
  for (const std::string& p : left) ::kill(std::stoi(p.substr(0, p.find(':'))), SIGKILL);
  EXPECT_TRUE(left.empty()) << testing::joined(left);
  EXPECT_FALSE(fs::exists(a.decoy / "alive-candidate"));
  EXPECT_FALSE(fs::exists(a.decoy / "alive-run"));
}

}  // namespace
}  // namespace marathon
