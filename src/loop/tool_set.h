// ToolSet: the tools a run offers, by name, and the check of a call's arguments against the tool's
// JSON schema. A bad call becomes an error message for the model, never an exception in the loop.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/tool.h"

namespace marathon {

class ToolSet {
 public:
  void add(std::unique_ptr<Tool> tool);  // a second tool of the same name replaces the first
  const Tool* find(const std::string& name) const;
  Tool* find(const std::string& name);
  std::vector<std::string> names() const;  // sorted
  // The OpenAI "tools" array: [{"type":"function","function":{name,description,parameters}}].
  json openai_tools() const;

 private:
  std::map<std::string, std::unique_ptr<Tool>> tools_;
};

// Checks `value` against the subset of JSON schema tools use: type (object, string, integer,
// number, boolean, array), required, properties, additionalProperties: false, enum, items,
// minimum/maximum, minLength. Returns the first problem ("arguments.path: expected string"), or
// nothing when the value conforms.
std::optional<std::string> check_schema(const json& value, const json& schema,
                                        const std::string& where = "arguments");

}  // namespace marathon
