#include "tools/tool_registry.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/json_reader.h"
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
  // A syntax error, nesting past the bound or a number out of range (1e400) is refused.
  OutsideJson read = read_outside_json(text);
  if (!read.ok()) {
    *error =
        "arguments of " + tool + " are not valid JSON (" + read.error + "); send one JSON object";
    return std::nullopt;
  }
  if (!read.value.is_object()) {
    *error = "arguments of " + tool + " must be a JSON object, got " + read.value.type_name();
    return std::nullopt;
  }
  return std::move(read.value);
}

CheckedCall ToolRegistry::check(const std::string& name, const std::string& arguments_text) const {
  if (!find(name)) return check_json(name, json::object());  // the unknown name first
  std::string error;
  std::optional<json> args = parse_tool_arguments(name, arguments_text, &error);
  if (!args) {
    CheckedCall c;
    c.tool = find(name);
    c.error = "error: " + error;
    return c;
  }
  return check_json(name, std::move(*args));
}

CheckedCall ToolRegistry::check_json(const std::string& name, json arguments) const {
  CheckedCall c;
  c.tool = find(name);
  if (!c.tool) {
    std::string valid;
    for (const std::string& n : names()) valid += (valid.empty() ? "" : ", ") + n;
    c.error = fmt::format("error: unknown tool \"{}\"; the tools are: {}", name, valid);
    return c;
  }
  std::vector<std::string> problems = validate_schema(arguments, c.tool->parameters());
  if (!problems.empty()) {
    c.error = fmt::format("error: invalid arguments for `{}`:", name);
    for (const std::string& p : problems) c.error += "\n- " + p;
    c.error += "\nexpected schema: " + c.tool->parameters().dump();
    return c;
  }
  c.arguments = std::move(arguments);
  return c;
}

ToolResult ToolRegistry::run(Tool& tool, const json& arguments, ToolContext& ctx) {
  try {
    return tool.run(arguments, ctx);
  } catch (const std::exception& e) {
    ToolResult r;
    r.ok = false;
    r.output = fmt::format("{} failed: {}", tool.name(), e.what());
    return r;
  }
}

namespace {

ToolResult run_checked(const CheckedCall& c, ToolContext& ctx) {
  if (!c.ok()) {
    ToolResult r;
    r.ok = false;
    r.output = c.error;
    return r;
  }
  return ToolRegistry::run(*c.tool, c.arguments, ctx);
}

}  // namespace

ToolResult ToolRegistry::call(const std::string& name, const std::string& arguments_text,
                              ToolContext& ctx) const {
  return run_checked(check(name, arguments_text), ctx);
}

ToolResult ToolRegistry::call_json(const std::string& name, const json& arguments,
                                   ToolContext& ctx) const {
  return run_checked(check_json(name, arguments), ctx);
}

}  // namespace marathon
