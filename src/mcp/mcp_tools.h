// The harness as MCP tools: evaluate, profile, status, ledger, best, note, revert. Each is a
// definition (name, description, input JSON Schema, annotations) and a call on the HarnessRun;
// note, revert and profile take the runner's tools' own schemas and descriptions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mcp/harness_run.h"

namespace marathon::mcp {

struct McpTool {
  std::string name;
  std::string title;
  std::string description;
  json input_schema;
  json annotations;
  bool slow = false;  // runs the evaluator (progress notifications are sent around it)
  std::function<ToolOutcome(HarnessRun&, const json& arguments)> call;

  json definition() const;  // the tools/list entry
};

const std::vector<McpTool>& mcp_tools();
const McpTool* find_mcp_tool(const std::string& name);

// The tools/call result of an outcome: content (the text, then the structured result as JSON
// text), structuredContent, isError.
json call_result(const ToolOutcome& o);

}  // namespace marathon::mcp
