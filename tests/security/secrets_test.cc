// A hostile model and a hostile candidate look for the runner's secrets through every route they
// have: `env`, /proc/1/environ (bubblewrap's own process in the sandbox), every /proc/*/environ,
// Python's os.environ in a `run` command, and the same again from a candidate's code inside the
// evaluator (getenv, os.environ, /proc, a child shell), whose result the evaluator reports
// verbatim. Afterwards the secrets must be nowhere: not in any file of the run folder, any row of
// its SQLite log, `marathon log --json`, either export, the binary's output, or any request sent to
// the model's provider.
#include <gtest/gtest.h>

#include "hostile_run.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::call;
using testing::places_holding;
using testing::read_text;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::TempDir;

// What the model does, turn by turn: look in the sandbox, plant a leaking candidate, evaluate and
// profile it, finish.
constexpr const char* kLookAround =
    "env; echo; cat /proc/1/environ; echo; cat /proc/*/environ; echo; "
    "echo key=$OPENAI_API_KEY pw=$MY_DB_PASSWORD access=$MARATHON_LLM_ACCESS; "
    "python3 -c 'import os; print(dict(os.environ))'; ps -eo pid,args; exit 0";

constexpr const char* kLeakingKernel = R"(import glob, os, subprocess

def main():
    out = ["getenv=%r %r %r" % (os.getenv("OPENAI_API_KEY"), os.getenv("MY_DB_PASSWORD"),
                                os.getenv("MARATHON_LLM_ACCESS")),
           "environ=%r" % dict(os.environ)]
    for p in ["/proc/1/environ", "/proc/self/environ"] + glob.glob("/proc/[0-9]*/environ"):
        try:
            out.append(p + "=" + open(p, "rb").read().decode("utf-8", "replace"))
        except OSError as e:
            out.append(p + ": " + str(e))
    out.append(subprocess.run(["sh", "-c", "env; cat /proc/1/environ"], capture_output=True,
                              text=True).stdout)
    return "\n".join(out)
)";

ScriptedLlmServer hostile_model() {
  return ScriptedLlmServer([](size_t, const json& request) {
    size_t turn = ScriptedLlmServer::assistant_turns(request);
    json calls = json::array();
    switch (turn) {
      case 0:
        calls.push_back(call("run", {{"command", kLookAround}}));
        break;
      case 1:
        calls.push_back(call("write_file", {{"path", "kernel.py"}, {"content", kLeakingKernel}}));
        break;
      case 2:
        calls.push_back(call("evaluate", {{"strategy", "read the environment"}}));
        break;
      case 3:
        calls.push_back(call("profile", json::object()));
        break;
      default:
        calls.push_back(call("finish", {{"summary", "looked everywhere"}}));
    }
    return testing::openai_tool_calls(calls);
  });
}

struct Leak {
  std::string name, value;
};

// Runs the hostile script with the secrets in marathon's environment, then looks everywhere.
void expect_no_leak(const std::vector<Leak>& secrets, std::vector<std::string> extra_args) {
  TempDir dir("secrets");
  ScriptedLlmServer server = hostile_model();
  fs::path run = dir / "run";
  std::string canary = testing::unique_token("canary-");
  std::map<std::string, std::string> env{{"MARATHON_CANARY", canary}};
  for (const Leak& s : secrets) env[s.name] = s.value;
  std::vector<std::string> args = {"run",        testing::hostile_task().string(),
                                   "--run-dir",  run.string(),
                                   "--policy",   "llm",
                                   "--model",    "openai:gpt-4o",
                                   "--base-url", server.base_url(),
                                   "--quiet"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  ASSERT_EQ(run_binary(args, env, dir / "run.log"), 0) << read_text(dir / "run.log");

  ASSERT_EQ(run_binary({"log", run.string(), "--json"}, {}, dir / "log.jsonl"), 0);
  ASSERT_EQ(run_binary({"log", "export", run.string(), "-o", (dir / "export.jsonl").string()}, {},
                       dir / "export.log"),
            0)
      << read_text(dir / "export.log");
  ASSERT_EQ(run_binary({"log", "export", run.string(), "-o", (dir / "export.msp").string(),
                        "--format", "msp"},
                       {}, dir / "export.log"),
            0)
      << read_text(dir / "export.log");
  std::string requests;
  for (const auto& r : server.requests()) requests += r.raw + "\n";

  // The routes were exercised: an allowed variable went through each of them (the canary), so
  // that a missing secret means it was kept out, not that nothing was looked at.
  std::string log_json = read_text(dir / "log.jsonl");
  size_t canaries = 0;
  for (size_t at = log_json.find(canary); at != std::string::npos;
       at = log_json.find(canary, at + 1)) {
    ++canaries;
  }
  EXPECT_GE(canaries, 3u) << "the run, evaluate and profile outputs should each show the canary:\n"
                          << log_json.substr(0, 4000);
  EXPECT_NE(requests.find(canary), std::string::npos) << "the model saw no tool output";

  for (const Leak& s : secrets) {
    std::vector<std::string> where = places_holding(dir.path(), s.value);
    EXPECT_TRUE(where.empty()) << s.name << " leaked into:\n" << testing::joined(where);
    EXPECT_EQ(requests.find(s.value), std::string::npos)
        << s.name << " was sent to the model's provider in a prompt";
  }
}

TEST(Secrets, HostileModelAndCandidateFindNoApiKeyOrPlantedSecretAnywhere) {
  expect_no_leak({{"OPENAI_API_KEY", testing::unique_token("sk-test-")},
                  {"MY_DB_PASSWORD", testing::unique_token("db-pass-")}},
                 {});
}

TEST(Secrets, AKeyInAnInnocentlyNamedVariableIsKeptOutToo) {
  // --api-key-env names where the key is; the name matches no credential pattern and the MARATHON_
  // prefix is on the allow-list, yet it must not pass.
  expect_no_leak({{"MARATHON_LLM_ACCESS", testing::unique_token("sk-access-")}},
                 {"--api-key-env", "MARATHON_LLM_ACCESS"});
}

}  // namespace
}  // namespace marathon
