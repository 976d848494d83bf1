// ToolRegistry: the tools on offer, by name, and the one path by which a model's tool call reaches
// a tool: check() parses the arguments text and checks it against the tool's schema, run() runs a
// checked call; every failure on the way (unknown name, invalid JSON, schema violation, an
// exception from the tool) becomes an error message the model can act on (ToolResult{ok=false}).
// The loop checks a call before it logs tool.started (with the parsed arguments when they are
// valid) and runs it after; call() is the two in one.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/tool.h"

namespace marathon {

// A tool call checked against the registry.
struct CheckedCall {
  Tool* tool = nullptr;
  json arguments;     // the parsed arguments (an object) when the call may run
  std::string error;  // what the model is told instead ("" when the call may run)
  bool ok() const { return error.empty(); }
};

class ToolRegistry {
 public:
  // Throws std::invalid_argument when a tool of that name is already registered.
  void add(std::unique_ptr<Tool> tool);
  Tool* find(const std::string& name) const;
  std::vector<std::string> names() const;  // in registration order
  // The OpenAI "tools" array: [{"type":"function","function":{name,description,parameters}}].
  json openai_tools() const;
  // `arguments_text` is the model's JSON text ("" means {}).
  CheckedCall check(const std::string& name, const std::string& arguments_text) const;
  // The same with arguments already parsed.
  CheckedCall check_json(const std::string& name, json arguments) const;
  // Runs a checked call (ok()); an exception from the tool becomes ToolResult{ok=false}.
  static ToolResult run(Tool& tool, const json& arguments, ToolContext& ctx);
  // check() then run(), or the check's error as ToolResult{ok=false}.
  ToolResult call(const std::string& name, const std::string& arguments_text,
                  ToolContext& ctx) const;
  ToolResult call_json(const std::string& name, const json& arguments, ToolContext& ctx) const;

 private:
  std::vector<std::unique_ptr<Tool>> tools_;
};

// Parses a tool call's arguments text: "" is {}, anything else must be a JSON object. On failure
// returns nullopt and sets `error` to a message naming the tool and the parse position.
std::optional<json> parse_tool_arguments(const std::string& tool, const std::string& text,
                                         std::string* error);

}  // namespace marathon
