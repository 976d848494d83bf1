#include "core/log_export.h"

#include <cstdio>
#include <ctime>

namespace marathon {

std::string format_rfc3339_us(int64_t us) {
  int64_t secs = us / 1000000;
  int64_t frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    secs -= 1;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(frac));
  return buf;
}

std::string payload_preview(const Event& e, size_t max_bytes) {
  std::string text = e.payload.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes > 3 ? max_bytes - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

json to_msp(const Event& e, const std::string& run_id) {
  std::string kind = e.stream, id = run_id;
  if (auto colon = e.stream.find(':'); colon != std::string::npos) {
    kind = e.stream.substr(0, colon);
    id = e.stream.substr(colon + 1);
  }
  return json{{"schema_version", kMspSchemaVersion},
              {"id", e.id},
              {"stream", {{"kind", kind}, {"id", id}}},
              {"sequence", e.seq},
              {"recorded_at", format_rfc3339_us(e.recorded_at_us)},
              {"record_type", "event"},
              {"durability", to_string(e.durability)},
              {"causation_id", e.causation.empty() ? json(nullptr) : json(e.causation)},
              {"payload_type", e.type},
              {"payload_schema_version", e.type_version},
              {"payload", e.payload}};
}

}  // namespace marathon
