// ToolRegistry: the tools on offer, by name, and the one entry point through which a model's tool
// call reaches a tool: the arguments text is parsed, checked against the tool's schema, and the
// tool run; every failure on the way (unknown name, invalid JSON, schema violation, an exception
// from the tool) becomes ToolResult{ok=false} with a message the model can act on.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/tool.h"

namespace marathon {

class ToolRegistry {
 public:
  // Throws std::invalid_argument when a tool of that name is already registered.
  void add(std::unique_ptr<Tool> tool);
  Tool* find(const std::string& name) const;
  std::vector<std::string> names() const;  // in registration order
  // The OpenAI "tools" array: [{"type":"function","function":{name,description,parameters}}].
  json openai_tools() const;
  // `arguments_text` is the model's JSON text ("" means {}).
  ToolResult call(const std::string& name, const std::string& arguments_text,
                  ToolContext& ctx) const;
  // The same with arguments already parsed.
  ToolResult call_json(const std::string& name, const json& arguments, ToolContext& ctx) const;

 private:
  std::vector<std::unique_ptr<Tool>> tools_;
};

// Parses a tool call's arguments text: "" is {}, anything else must be a JSON object. On failure
// returns nullopt and sets `error` to a message naming the tool and the parse position.
std::optional<json> parse_tool_arguments(const std::string& tool, const std::string& text,
                                         std::string* error);

}  // namespace marathon
