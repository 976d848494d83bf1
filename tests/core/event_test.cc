#include "core/event.h"

#include <gtest/gtest.h>

#include "core/events.h"
#include "core/log_export.h"

namespace marathon {
namespace {

Event sample() {
  Event e;
  e.seq = 7;
  e.id = "ev-1";
  e.stream = "branch:2";
  e.recorded_at_us = 1764670272123456;
  e.type = events::ToolFinished::kType;
  e.type_version = 1;
  e.durability = Durability::kEphemeral;
  e.causation = "ev-0";
  e.payload = {{"call_id", "c"}, {"ok", true}};
  return e;
}

TEST(EventJson, RoundTripsEveryEnvelopeField) {
  Event e = sample();
  Event back = event_from_json(to_json(e));
  EXPECT_EQ(to_json(back), to_json(e));
}

TEST(EventJson, MissingFieldIsNamed) {
  json j = to_json(sample());
  j.erase("type");
  try {
    event_from_json(j);
    FAIL();
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("'type'"), std::string::npos);
  }
  EXPECT_THROW(durability_from_string("forever"), std::invalid_argument);
}

TEST(MspExport, MapsEnvelopeFields) {
  json m = to_msp(sample(), "run-x");
  EXPECT_EQ(m["sequence"], 7);
  EXPECT_EQ(m["stream"]["kind"], "branch");
  EXPECT_EQ(m["stream"]["id"], "2");
  EXPECT_EQ(m["recorded_at"], "2025-12-02T10:11:12.123456Z");
  EXPECT_EQ(m["payload_type"], "tool.finished");
  EXPECT_EQ(m["durability"], "ephemeral");
  EXPECT_EQ(m["causation_id"], "ev-0");
  Event run = sample();
  run.stream = "run";
  run.causation.clear();
  json r = to_msp(run, "run-x");
  EXPECT_EQ(r["stream"]["id"], "run-x");
  EXPECT_TRUE(r["causation_id"].is_null());
}

}  // namespace
}  // namespace marathon
