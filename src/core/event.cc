// Event envelope conversions (see event.h and docs/event-log.md).
#include "core/event.h"

#include <stdexcept>

namespace marathon {

std::string to_string(Durability d) { return d == Durability::kDurable ? "durable" : "ephemeral"; }

Durability durability_from_string(const std::string& s) {
  if (s == "durable") return Durability::kDurable;
  if (s == "ephemeral") return Durability::kEphemeral;
  throw std::invalid_argument("unknown durability '" + s + "' (expected durable or ephemeral)");
}

json to_json(const Event& e) {
  return json{{"seq", e.seq},
              {"id", e.id},
              {"stream", e.stream},
              {"recorded_at", e.recorded_at_us},
              {"type", e.type},
              {"type_version", e.type_version},
              {"durability", to_string(e.durability)},
              {"causation", e.causation},
              {"payload", e.payload}};
}

namespace {
const json& field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end())
    throw std::invalid_argument(std::string("event JSON lacks field '") + name + "'");
  return *it;
}
}  // namespace

Event event_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("event JSON is not an object");
  Event e;
  try {
    e.seq = field(j, "seq").get<int64_t>();
    e.id = field(j, "id").get<std::string>();
    e.stream = field(j, "stream").get<std::string>();
    e.recorded_at_us = field(j, "recorded_at").get<int64_t>();
    e.type = field(j, "type").get<std::string>();
    e.type_version = field(j, "type_version").get<int>();
    e.durability = durability_from_string(field(j, "durability").get<std::string>());
    e.causation = j.value("causation", std::string());
    e.payload = field(j, "payload");
  } catch (const json::exception& ex) {
    throw std::invalid_argument(std::string("event JSON has a field of the wrong type: ") +
                                ex.what());
  }
  return e;
}

}  // namespace marathon
