// The event envelope: one row of a run's append-only log (docs/event-log.md spells out every type).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace marathon {

using json = nlohmann::json;

enum class Durability { kDurable, kEphemeral };

// An event as stored. `seq` is dense from 1 and is the order of the log; `id` is unique and is the
// idempotency anchor; `causation` is the id of the event that caused this one (empty if none).
struct Event {
  int64_t seq = 0;
  std::string id;
  std::string stream = "run";
  int64_t recorded_at_us = 0;
  std::string type;
  int type_version = 1;
  Durability durability = Durability::kDurable;
  std::string causation;
  json payload = json::object();
};

// An event to append: the store assigns seq, recorded_at_us and (when empty) id.
struct NewEvent {
  std::string type;
  json payload = json::object();
  std::string causation;
  std::string stream = "run";
  int type_version = 1;
  Durability durability = Durability::kDurable;
  std::string id;  // empty: the store generates one
};

std::string to_string(Durability d);
Durability durability_from_string(const std::string& s);  // throws std::invalid_argument

// JSON form of an event (the `marathon log --json` line): all envelope fields plus payload.
json to_json(const Event& e);
Event event_from_json(const json& j);  // throws std::invalid_argument naming the missing field

// The event types and their payloads: core/events.h.

}  // namespace marathon
