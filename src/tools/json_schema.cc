#include "tools/json_schema.h"

#include <cmath>

namespace marathon {
namespace {

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    if (v.is_number_integer()) return true;
    return v.is_number_float() && std::floor(v.get<double>()) == v.get<double>();
  }
  return true;  // unknown type names do not reject
}

std::string type_name(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  return v.type_name();
}

void validate(const json& v, const json& s, const std::string& where,
              std::vector<std::string>& errors) {
  if (!s.is_object()) return;
  if (s.contains("type")) {
    const json& t = s["type"];
    bool ok = false;
    std::string expected;
    if (t.is_string()) {
      ok = has_type(v, t.get<std::string>());
      expected = t.get<std::string>();
    } else if (t.is_array()) {
      for (const json& one : t) {
        if (one.is_string() && has_type(v, one.get<std::string>())) ok = true;
        expected += (expected.empty() ? "" : " or ") +
                    (one.is_string() ? one.get<std::string>() : one.dump());
      }
    } else {
      ok = true;
    }
    if (!ok) {
      errors.push_back(where + ": expected " + expected + ", got " + type_name(v));
      return;  // the other keywords would only repeat the mismatch
    }
  }
  if (s.contains("enum") && s["enum"].is_array()) {
    bool found = false;
    for (const json& e : s["enum"]) found = found || e == v;
    if (!found) errors.push_back(where + ": " + v.dump() + " is not one of " + s["enum"].dump());
  }
  if (v.is_number()) {
    double x = v.get<double>();
    if (s.contains("minimum") && s["minimum"].is_number() && x < s["minimum"].get<double>()) {
      errors.push_back(where + ": " + v.dump() + " is below the minimum " + s["minimum"].dump());
    }
    if (s.contains("maximum") && s["maximum"].is_number() && x > s["maximum"].get<double>()) {
      errors.push_back(where + ": " + v.dump() + " is above the maximum " + s["maximum"].dump());
    }
  }
  if (v.is_string()) {
    // Compared as doubles: a bound no size_t holds (negative, 1e300) is then still a bound.
    double n = static_cast<double>(v.get_ref<const std::string&>().size());
    if (s.contains("minLength") && s["minLength"].is_number() && n < s["minLength"].get<double>()) {
      errors.push_back(where + ": shorter than " + s["minLength"].dump() + " characters");
    }
    if (s.contains("maxLength") && s["maxLength"].is_number() && n > s["maxLength"].get<double>()) {
      errors.push_back(where + ": longer than " + s["maxLength"].dump() + " characters");
    }
  }
  if (v.is_object()) {
    const json props = s.value("properties", json::object());
    if (s.contains("required") && s["required"].is_array()) {
      for (const json& r : s["required"]) {
        if (r.is_string() && !v.contains(r.get<std::string>())) {
          errors.push_back(where + "." + r.get<std::string>() + ": required property is missing");
        }
      }
    }
    for (const auto& [key, value] : v.items()) {
      if (props.is_object() && props.contains(key)) {
        validate(value, props[key], where + "." + key, errors);
      } else if (s.contains("additionalProperties")) {
        const json& extra = s["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) {
          std::string known;
          if (props.is_object()) {
            for (const auto& [k, _] : props.items()) known += (known.empty() ? "" : ", ") + k;
          }
          errors.push_back(where + "." + key + ": unknown property (allowed: " + known + ")");
        } else if (extra.is_object()) {
          validate(value, extra, where + "." + key, errors);
        }
      }
    }
  }
  if (v.is_array() && s.contains("items") && s["items"].is_object()) {
    for (size_t i = 0; i < v.size(); ++i) {
      validate(v[i], s["items"], where + "[" + std::to_string(i) + "]", errors);
    }
  }
}

}  // namespace

std::vector<std::string> validate_schema(const json& value, const json& schema,
                                         const std::string& where) {
  std::vector<std::string> errors;
  validate(value, schema, where, errors);
  return errors;
}

}  // namespace marathon
