#include "llm/reply_check.h"

#include <set>

#include "core/json_reader.h"

namespace marathon::llm {

std::vector<ReplyProblem> check_tool_calls(const json& message, const json& offered_tools) {
  std::vector<ReplyProblem> problems;
  if (!message.is_object() || !message.contains("tool_calls")) return problems;
  std::set<std::string> offered;
  if (offered_tools.is_array()) {
    for (const json& t : offered_tools) {
      const json& fn = t.contains("function") ? t["function"] : t;
      if (fn.contains("name") && fn["name"].is_string())
        offered.insert(fn["name"].get<std::string>());
    }
  }
  std::string valid;
  for (const auto& n : offered) valid += (valid.empty() ? "" : ", ") + n;
  for (const json& call : message["tool_calls"]) {
    std::string id = call.value("id", "");
    const json& fn = call.value("function", json::object());
    std::string name = fn.value("name", "");
    std::string args = fn.value("arguments", "");
    if (name.empty()) {
      problems.push_back(
          {id, "missing_name", "tool call " + id + " names no tool; valid tools: " + valid});
      continue;
    }
    if (!offered.empty() && !offered.count(name)) {
      problems.push_back({id, "unknown_tool",
                          "unknown tool '" + name + "' (call " + id + "); valid tools: " + valid});
    }
    if (args.find_first_not_of(" \t\r\n") == std::string::npos) continue;  // no arguments: {}
    // A syntax error, nesting past the bound or a number out of range (1e400) is refused.
    OutsideJson parsed = read_outside_json(args);
    if (!parsed.ok()) {
      problems.push_back(
          {id, "bad_arguments",
           "arguments of call " + id + " to '" + name + "' are not valid JSON: " + parsed.error});
    } else if (!parsed.value.is_object()) {
      problems.push_back({id, "bad_arguments",
                          "arguments of call " + id + " to '" + name +
                              "' must be a JSON object, got " + parsed.value.type_name()});
    }
  }
  return problems;
}

}  // namespace marathon::llm
