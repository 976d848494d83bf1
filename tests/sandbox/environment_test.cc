// The sandbox's environment (built, never inherited: credentials never pass) and its output
// capture (bounded memory, head and tail exact).
#include "sandbox/environment.h"

#include <gtest/gtest.h>

#include "sandbox/capture.h"
#include "sandbox/python_env.h"

namespace marathon::sandbox {
namespace {

TEST(SandboxEnvironment, CredentialNamesNeverPassWhateverListTheyComeFrom) {
  EnvMap host = {{"OPENAI_API_KEY", "sk-1"},
                 {"MARATHON_API_KEY", "sk-2"},
                 {"MARATHON_GITHUB_TOKEN", "t"},
                 {"TRITON_SECRET", "s"},
                 {"MY_DB_PASSWORD", "p"},
                 {"AWS_SECRET_ACCESS_KEY", "a"},
                 {"HOME", "/root"},
                 {"SSH_AUTH_SOCK", "/run/agent"},
                 {"CUDA_VISIBLE_DEVICES", "0"},
                 {"MARATHON_EVAL_MARKER", "/m"},
                 {"TRITON_INTERPRET", "1"},
                 {"PYENV_ROOT", "/root/.pyenv"}};
  EnvMap extra = {{"MARATHON_CANDIDATE_DIR", "/c"}, {"ANTHROPIC_AUTH_TOKEN", "x"}};
  EnvMap fixed = {{"PATH", "/usr/bin"}, {"HOME", "/ws"}};
  EnvMap env = sandbox_environment(host, fixed, extra);
  EXPECT_EQ(env, (EnvMap{{"PATH", "/usr/bin"},
                         {"HOME", "/ws"},
                         {"CUDA_VISIBLE_DEVICES", "0"},
                         {"MARATHON_EVAL_MARKER", "/m"},
                         {"TRITON_INTERPRET", "1"},
                         {"MARATHON_CANDIDATE_DIR", "/c"}}));
}

TEST(SandboxEnvironment, AVariableNamedAsTheApiKeySourceNeverPassesEvenWithAnInnocentName) {
  EnvMap host = {{"MARATHON_LLM", "sk-live"}, {"MARATHON_OTHER", "fine"}};
  EnvMap env = sandbox_environment(host, {}, {{"MARATHON_LLM", "sk-live"}}, {"MARATHON_LLM"});
  EXPECT_EQ(env, (EnvMap{{"MARATHON_OTHER", "fine"}}));
}

TEST(SandboxEnvironment, LowerCaseCredentialNamesAreCaughtToo) {
  EXPECT_TRUE(secret_name("openai_api_key"));
  EXPECT_TRUE(secret_name("Db_Passwd"));
  EXPECT_FALSE(secret_name("CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(passes_through("LD_PRELOAD"));
  EXPECT_FALSE(passes_through("PYTHONSTARTUP"));
}

TEST(Capture, KeepsHeadAndTailExactlyAndCountsEverything) {
  Capture c(4, 6);
  std::string all;
  for (int i = 0; i < 1000; ++i) {
    std::string chunk = std::to_string(i) + ",";
    all += chunk;
    c.append(chunk.data(), chunk.size());
  }
  EXPECT_EQ(c.total(), all.size());
  EXPECT_TRUE(c.truncated());
  EXPECT_EQ(c.head(), all.substr(0, 4));
  EXPECT_EQ(c.tail(), all.substr(all.size() - 6));
  EXPECT_EQ(c.text(), all.substr(0, 4) + "\n[... " + std::to_string(all.size() - 10) +
                          " bytes not kept ...]\n" + all.substr(all.size() - 6));
}

TEST(Capture, AChunkLargerThanTheTailReplacesItAndShortOutputIsWhole) {
  Capture c(3, 4);
  c.append("abcdefghij", 10);
  EXPECT_EQ(c.head(), "abc");
  EXPECT_EQ(c.tail(), "ghij");
  c.append("kl", 2);
  EXPECT_EQ(c.tail(), "ijkl");
  Capture small(3, 4);
  small.append("abcdefg", 7);
  EXPECT_FALSE(small.truncated());
  EXPECT_EQ(small.text(), "abcdefg");
  Capture head_only(3, 0);
  head_only.append("abcdefg", 7);
  EXPECT_TRUE(head_only.truncated());
  EXPECT_EQ(head_only.tail(), "");
}

TEST(PythonQuery, AVenvBindsItsPrefixItsBaseAndStraySysPathFoldersOnce) {
  PythonEnv e = parse_python_query(
      "warning: something\n"
      R"({"executable": "/h/venv/bin/python3", "prefix": "/h/venv", "base_prefix": "/opt/py/3.11",
          "path": ["/opt/py/3.11/lib/python3.11", "/h/venv/lib/python3.11/site-packages",
                   "/src/editable", "relative", ""]})");
  ASSERT_TRUE(e.error.empty()) << e.error;
  EXPECT_EQ(e.executable, "/h/venv/bin/python3");
  std::vector<std::filesystem::path> want = {"/h/venv", "/opt/py/3.11", "/src/editable"};
  EXPECT_EQ(e.dirs, want);
  EXPECT_FALSE(parse_python_query("Traceback ...").error.empty());
}

}  // namespace
}  // namespace marathon::sandbox
