#include "tools/tool_registry.h"

#include <stdexcept>

#include "tools/json_schema.h"

namespace marathon {

void ToolRegistry::add(std::unique_ptr<Tool> tool) {
  if (find(tool->name()))
    throw std::invalid_argument("tool '" + tool->name() + "' registered twice");
  tools_.push_back(std::move(tool));
}

Tool* ToolRegistry::find(const std::string& name) const {
  for (const auto& t : tools_) {
    if (t->name() == name) return t.get();
  }
  return nullptr;
}

std::vector<std::string> ToolRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& t : tools_) out.push_back(t->name());
  return out;
}

json ToolRegistry::openai_tools() const {
  json out = json::array();
  for (const auto& t : tools_) {
    out.push_back({{"type", "function"},
                   {"function",
                    {{"name", t->name()},
                     {"description", t->description()},
                     {"parameters", t->parameters()}}}});
  }
  return out;
}

std::optional<json> parse_tool_arguments(const std::string& tool, const std::string& text,
                                         std::string* error) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  try {
    json j = json::parse(text);
    if (!j.is_object()) {
      *error = "arguments of " + tool + " must be a JSON object, got " + j.type_name();
      return std::nullopt;
    }
    return j;
  } catch (const json::exception& e) {  // a syntax error, or a number out of range (1e400)
    *error =
        "arguments of " + tool + " are not valid JSON (" + e.what() + "); send one JSON object";
    return std::nullopt;
  }
}

ToolResult ToolRegistry::call(const std::string& name, const std::string& arguments_text,
                              ToolContext& ctx) const {
  std::string error;
  auto args = parse_tool_arguments(name, arguments_text, &error);
  if (!args) {
    ToolResult r;
    r.ok = false;
    r.output = error;
    return r;
  }
  return call_json(name, *args, ctx);
}

ToolResult ToolRegistry::call_json(const std::string& name, const json& arguments,
                                   ToolContext& ctx) const {
  ToolResult r;
  r.ok = false;
  Tool* tool = find(name);
  if (!tool) {
    std::string valid;
    for (const auto& n : names()) valid += (valid.empty() ? "" : ", ") + n;
    r.output = "unknown tool '" + name + "'; valid tools: " + valid;
    return r;
  }
  auto problems = validate_schema(arguments, tool->parameters());
  if (!problems.empty()) {
    r.output = "invalid arguments for " + name + ":";
    for (const auto& p : problems) r.output += "\n- " + p;
    r.output += "\nexpected schema: " + tool->parameters().dump();
    return r;
  }
  try {
    return tool->run(arguments, ctx);
  } catch (const std::exception& e) {
    r.output = name + " failed: " + e.what();
    return r;
  }
}

}  // namespace marathon
