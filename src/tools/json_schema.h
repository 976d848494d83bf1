// A validator for the subset of JSON schema the tools use: type (incl. a list of types),
// properties, required, enum, additionalProperties (false or a schema), items, minimum/maximum,
// minLength/ maxLength. (Debian packages no JSON-schema validator for nlohmann::json; this is
// enough for tool arguments.) Pure.
#pragma once

#include <string>
#include <vector>

#include "core/event.h"

namespace marathon {

// Every way `value` breaks `schema`, each as "where: what" (e.g. "arguments.path: required property
// is missing"); empty when it conforms. Unknown schema keywords are ignored.
std::vector<std::string> validate_schema(const json& value, const json& schema,
                                         const std::string& where = "arguments");

}  // namespace marathon
