// The scripted "model" of the loop's end-to-end tests, for the tiny task (fixtures/tiny-task).
#pragma once

#include <string>
#include <vector>

#include "core/event_store.h"
#include "core/workspace_snapshot.h"
#include "loop_test_support.h"
#include "scripted_llm_server.h"

namespace marathon {

namespace fs = std::filesystem;
using testing::ScriptedLlmServer;
using testing::ScriptedResponse;

inline json tc(const std::string& name, json args) {
  return {{"name", name}, {"arguments", std::move(args)}};
}

inline std::string content_sha(const std::string& text) { return sha256_hex(text); }

// The candidate hash of a tiny-task workspace holding `text` in solution.txt.
inline std::string tiny_candidate(const std::string& text) {
  return candidate_hash(WorkspaceFiles{{"solution.txt", content_sha(text)}});
}

// The scripted "model" for the tiny task: note, write, evaluate, improve, a worse try, revert to
// the best, a cached re-evaluation, a stop without finish (a goal turn), then finish.
inline ScriptedResponse tiny_script(size_t turn) {
  using testing::openai_text;
  using testing::openai_tool_calls;
  auto write = [](const std::string& text) {
    return tc("write_file", {{"path", "solution.txt"}, {"content", text}});
  };
  auto evaluate = [](const std::string& why) { return tc("evaluate", {{"strategy", why}}); };
  json calls = json::array();
  std::string text;
  switch (turn) {
    case 0:
      calls.push_back(tc("note", {{"kind", "strategy"}, {"text", "raise the value"}}));
      calls.push_back(write("value = 2\n"));
      text = "Start small.";
      break;
    case 1:
      calls.push_back(evaluate("value 2"));
      break;
    case 2:
      calls.push_back(write("value = 5\n"));
      break;
    case 3:
      calls.push_back(evaluate("value 5"));
      break;
    case 4:
      calls.push_back(write("value = 3\n"));
      calls.push_back(evaluate("value 3"));
      break;
    case 5:
      calls.push_back(tc("note", {{"kind", "dead_end"}, {"text", "3 is worse than 5"}}));
      calls.push_back(tc("revert", {{"candidate", tiny_candidate("value = 5\n")}}));
      break;
    case 6:
      calls.push_back(evaluate("back to 5"));
      break;
    case 7:
      return openai_text("I believe this is as good as it gets.");
    case 8:
      calls.push_back(tc("finish", {{"summary", "value 5 is the best"}}));
      break;
    default:
      return openai_text("the script has ended");
  }
  return openai_tool_calls(calls, text);
}
constexpr size_t kTinyTurns = 9;

inline std::vector<std::string> tiny_run_args(const fs::path& run_dir,
                                              const std::string& base_url) {
  return {"run",        testing::tiny_task().string(),
          "--run-dir",  run_dir.string(),
          "--policy",   "llm",
          "--model",    "vllm:scripted",
          "--base-url", base_url,
          "--quiet"};
}

inline ScriptedLlmServer tiny_server() {
  return ScriptedLlmServer([](size_t, const json& request) {
    return tiny_script(ScriptedLlmServer::assistant_turns(request));
  });
}

}  // namespace marathon
