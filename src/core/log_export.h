// Export forms of events: JSONL (to_json(Event) per line) and the msp record envelope
// (schema_version, id, stream{kind,id}, sequence, recorded_at, record_type, durability,
// causation_id, payload_type, payload_schema_version, payload); record_type is "event" and
// payload_type the event type. Pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "core/event.h"

namespace marathon {

inline constexpr int kMspSchemaVersion = 1;

// "2026-12-02T10:11:12.345678Z" (UTC, microseconds).
std::string format_rfc3339_us(int64_t us_since_epoch);

// The payload as one line of compact JSON, cut to at most `max_bytes` (ending "..." when cut, never
// inside a UTF-8 sequence): the text of a `marathon log` line and of the dashboard's event stream.
std::string payload_preview(const Event& e, size_t max_bytes);

// The msp envelope of one event of run `run_id`. A stream "kind:id" maps to {kind, id}; the plain
// stream "run" maps to {"run", run_id}.
json to_msp(const Event& e, const std::string& run_id);

}  // namespace marathon
