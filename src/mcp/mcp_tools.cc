#include "mcp/mcp_tools.h"

#include "tools/tool_note.h"
#include "tools/tool_profile.h"
#include "tools/tool_revert.h"

namespace marathon::mcp {

namespace {

json annotations(bool read_only, bool destructive, bool idempotent) {
  return {{"readOnlyHint", read_only},
          {"destructiveHint", destructive},
          {"idempotentHint", idempotent},
          {"openWorldHint", false}};
}

json no_arguments() {
  return {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
}

std::vector<McpTool> make_tools() {
  std::unique_ptr<Tool> note = make_note_tool(), revert = make_revert_tool(),
                        profile = make_profile_tool();
  std::vector<McpTool> t;
  t.push_back(
      {"evaluate",
       "Evaluate a candidate",
       "Write the given editable files into the run's workspace (path -> full content; files not "
       "given stay as they are) and run the task's evaluator on the workspace: correctness on "
       "fresh inputs, the score (the goal metric), rule violations (a candidate that breaks the "
       "task's rules never counts) and a short log. A candidate already evaluated is answered "
       "from the result cache (`cached`: true). Every call is logged in the run. Give `strategy`, "
       "a few words on what this candidate tries: it goes into the ledger.",
       {{"type", "object"},
        {"properties",
         {{"files",
           {{"type", "object"},
            {"description", "editable file path -> its full new content"},
            {"additionalProperties", {{"type", "string"}}}}},
          {"strategy", {{"type", "string"}, {"description", "what this candidate tries"}}}}},
        {"additionalProperties", false}},
       annotations(false, false, true),
       true,
       [](HarnessRun& h, const json& a) {
         return h.evaluate(a.value("files", json::object()), a.value("strategy", ""));
       }});
  t.push_back({"profile", "Profile the workspace", profile->description(), profile->parameters(),
               annotations(false, false, true), true,
               [](HarnessRun& h, const json&) { return h.profile(); }});
  t.push_back({"status", "Run status",
               "Where the run stands: goal, best and baseline score, evaluations, budget used and "
               "left, whether it is open, paused or finished.",
               no_arguments(), annotations(true, false, true), false,
               [](HarnessRun& h, const json&) { return h.status(); }});
  t.push_back({"ledger", "Strategy ledger",
               "The run's ledger: one entry per evaluation (candidate, correct, score, why it "
               "failed) and every note, as the runtime's own agents see it.",
               no_arguments(), annotations(true, false, true), false,
               [](HarnessRun& h, const json&) { return h.ledger(); }});
  t.push_back({"best", "Best candidate",
               "The best correct candidate so far: its score, its hash and its files.",
               no_arguments(), annotations(true, false, true), false,
               [](HarnessRun& h, const json&) { return h.best(); }});
  t.push_back({"note", "Note in the ledger", note->description(), note->parameters(),
               annotations(false, false, false), false, [](HarnessRun& h, const json& a) {
                 return h.note(a.at("kind").get<std::string>(), a.at("text").get<std::string>());
               }});
  t.push_back({"revert", "Revert the workspace", revert->description(), revert->parameters(),
               annotations(false, true, true), false, [](HarnessRun& h, const json& a) {
                 return h.revert(a.at("candidate").get<std::string>());
               }});
  return t;
}

}  // namespace

json McpTool::definition() const {
  return {{"name", name},
          {"title", title},
          {"description", description},
          {"inputSchema", input_schema},
          {"annotations", annotations}};
}

const std::vector<McpTool>& mcp_tools() {
  static const std::vector<McpTool> kTools = make_tools();
  return kTools;
}

const McpTool* find_mcp_tool(const std::string& name) {
  for (const McpTool& t : mcp_tools()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

json call_result(const ToolOutcome& o) {
  json content = json::array();
  content.push_back({{"type", "text"}, {"text", o.text}});
  content.push_back({{"type", "text"},
                     {"text", o.structured.dump(-1, ' ', false, json::error_handler_t::replace)}});
  return {{"content", content}, {"structuredContent", o.structured}, {"isError", o.is_error}};
}

}  // namespace marathon::mcp
