#include "loop/tool_set.h"

#include <fmt/format.h>

namespace marathon {

void ToolSet::add(std::unique_ptr<Tool> tool) {
  std::string name = tool->name();
  tools_[name] = std::move(tool);
}

const Tool* ToolSet::find(const std::string& name) const {
  auto it = tools_.find(name);
  return it == tools_.end() ? nullptr : it->second.get();
}

Tool* ToolSet::find(const std::string& name) {
  auto it = tools_.find(name);
  return it == tools_.end() ? nullptr : it->second.get();
}

std::vector<std::string> ToolSet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, tool] : tools_) out.push_back(name);
  return out;
}

json ToolSet::openai_tools() const {
  json out = json::array();
  for (const auto& [name, tool] : tools_) {
    out.push_back({{"type", "function"},
                   {"function",
                    {{"name", name},
                     {"description", tool->description()},
                     {"parameters", tool->parameters()}}}});
  }
  return out;
}

namespace {

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer") {
    return v.is_number_integer() || (v.is_number_float() && v.get<double>() == int64_t(v.get<double>()));
  }
  if (type == "number") return v.is_number();
  if (type == "null") return v.is_null();
  return true;  // a type this checker does not know is not held against the caller
}

std::string type_list(const json& t) { return t.is_array() ? t.dump() : t.get<std::string>(); }

}  // namespace

std::optional<std::string> check_schema(const json& value, const json& schema,
                                        const std::string& where) {
  if (!schema.is_object()) return std::nullopt;
  if (schema.contains("type")) {
    const json& t = schema["type"];
    bool ok = false;
    if (t.is_string()) {
      ok = has_type(value, t.get<std::string>());
    } else if (t.is_array()) {
      for (const json& one : t) ok = ok || (one.is_string() && has_type(value, one.get<std::string>()));
    } else {
      ok = true;
    }
    if (!ok) {
      return fmt::format("{}: expected {}, got {}", where, type_list(t), value.type_name());
    }
  }
  if (schema.contains("enum") && schema["enum"].is_array()) {
    bool found = false;
    for (const json& e : schema["enum"]) found = found || e == value;
    if (!found) return fmt::format("{}: must be one of {}, got {}", where, schema["enum"].dump(), value.dump());
  }
  if (value.is_string() && schema.contains("minLength") &&
      value.get<std::string>().size() < schema["minLength"].get<size_t>()) {
    return fmt::format("{}: must be at least {} characters", where, schema["minLength"].dump());
  }
  if (value.is_number()) {
    double v = value.get<double>();
    if (schema.contains("minimum") && v < schema["minimum"].get<double>()) {
      return fmt::format("{}: must be >= {}", where, schema["minimum"].dump());
    }
    if (schema.contains("maximum") && v > schema["maximum"].get<double>()) {
      return fmt::format("{}: must be <= {}", where, schema["maximum"].dump());
    }
  }
  if (value.is_object()) {
    if (schema.contains("required") && schema["required"].is_array()) {
      for (const json& r : schema["required"]) {
        if (r.is_string() && !value.contains(r.get<std::string>())) {
          return fmt::format("{}: missing required field \"{}\"", where, r.get<std::string>());
        }
      }
    }
    const json props = schema.value("properties", json::object());
    for (const auto& [key, v] : value.items()) {
      if (props.is_object() && props.contains(key)) {
        if (auto p = check_schema(v, props[key], where + "." + key)) return p;
      } else if (schema.contains("additionalProperties") &&
                 schema["additionalProperties"] == false) {
        return fmt::format("{}: unexpected field \"{}\"", where, key);
      }
    }
  }
  if (value.is_array() && schema.contains("items")) {
    for (size_t i = 0; i < value.size(); ++i) {
      if (auto p = check_schema(value[i], schema["items"], fmt::format("{}[{}]", where, i))) return p;
    }
  }
  return std::nullopt;
}

}  // namespace marathon
