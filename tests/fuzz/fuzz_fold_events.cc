// Fuzz target: fold() over events whose payloads are anything JSON can hold. The input is JSON
// lines, one event each: {"type": ..., "recorded_at": ..., "payload": {...}} (seq is the line's
// number among the events). The seeds are the events of small real logs.
// Contracts held (core/fold.h, core/state_json.h): apply() rejects a malformed payload with
// std::invalid_argument and nothing else; a folded State that state_to_json accepts reads back
// through state_from_json as the same State (what a checkpoint relies on); the status view
// (to_json(State)) and the checkpoint text dump without throwing.
#include <sstream>

#include "core/fold.h"
#include "core/state_json.h"
#include "fuzz_check.h"

namespace {

using marathon::json;
using marathon::fuzz::expect;

std::vector<marathon::Event> events_of(std::string_view text) {
  std::vector<marathon::Event> events;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    marathon::Event e;
    e.seq = static_cast<int64_t>(events.size()) + 1;
    if (auto t = j.find("type"); t != j.end() && t->is_string()) e.type = *t;
    if (auto r = j.find("recorded_at"); r != j.end() && r->is_number_integer()) {
      e.recorded_at_us = r->get<int64_t>();
    }
    if (auto p = j.find("payload"); p != j.end()) e.payload = *p;
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  marathon::State s;
  for (const marathon::Event& e : events_of(marathon::fuzz::bytes(data, size))) {
    try {
      marathon::apply(s, e);
    } catch (const std::invalid_argument&) {
      break;  // the log is unreadable from here; what was folded so far must still hold up
    }
  }
  (void)marathon::to_json(s).dump();
  json checkpoint;
  try {
    checkpoint = marathon::state_to_json(s);
  } catch (const std::invalid_argument&) {
    return 0;  // a non-finite number: documented, the checkpoint is not written
  }
  std::string text = checkpoint.dump();
  marathon::State back = marathon::state_from_json(json::parse(text));
  expect(back == s, "state_from_json(state_to_json(s)) differs from s: " + text);
  return 0;
}
