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

inline json tc(const std::string& name, json args) { return {{"name", name}, {"arguments", std::move(args)}}; }

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
  switch (turn) {
    case 0:
      return openai_tool_calls({tc("note", {{"kind", "strategy"}, {"text", "raise the value"}}),
                                tc("write_file", {{"path", "solution.txt"}, {"content", "value = 2\n"}})},
                               "Start small.");
    case 1: return openai_tool_calls({tc("evaluate", {{"strategy", "value 2"}})});
    case 2: return openai_tool_calls({tc("write_file", {{"path", "solution.txt"}, {"content", "value = 5\n"}})});
    case 3: return openai_tool_calls({tc("evaluate", {{"strategy", "value 5"}})});
    case 4:
      return openai_tool_calls({tc("write_file", {{"path", "solution.txt"}, {"content", "value = 3\n"}}),
                                tc("evaluate", {{"strategy", "value 3"}})});
    case 5:
      return openai_tool_calls({tc("note", {{"kind", "dead_end"}, {"text", "3 is worse than 5"}}),
                                tc("revert", {{"candidate", tiny_candidate("value = 5\n")}})});
    case 6: return openai_tool_calls({tc("evaluate", {{"strategy", "back to 5"}})});
    case 7: return openai_text("I believe this is as good as it gets.");
    case 8: return openai_tool_calls({tc("finish", {{"summary", "value 5 is the best"}})});
    default: return openai_text("the script has ended");
  }
}
constexpr size_t kTinyTurns = 9;

inline std::vector<std::string> tiny_run_args(const fs::path& run_dir, const std::string& base_url) {
  return {"run",     testing::tiny_task().string(), "--run-dir", run_dir.string(), "--policy", "llm",
          "--model", "vllm:scripted",               "--base-url", base_url,        "--quiet"};
}

inline ScriptedLlmServer tiny_server() {
  return ScriptedLlmServer([](size_t, const json& request) {
    return tiny_script(ScriptedLlmServer::assistant_turns(request));
  });
}


}  // namespace marathon
