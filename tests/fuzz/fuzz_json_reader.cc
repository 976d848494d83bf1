// Fuzz target: the two readers of core/json_reader.cc, checked against json::parse. parse_json is
// the reader every payload in the log goes through; read_outside_json the bounded one every byte
// from outside goes through. The first input byte picks the top-level members parse_json leaves
// out (fold's projection); the rest is the text.
// Contracts held (core/json_reader.h): read_outside_json never throws; it accepts exactly what
// json::parse accepts, less text nested deeper than kMaxOutsideJsonDepth, with the same value, and
// refuses with a bounded, printable reason. parse_json, with nothing left out, gives the same value
// as json::parse or the same refusal (a json::exception); with members left out, when json::parse
// accepts the text, the same value less those members. Values nested past the bound are never
// dumped or compared here (that recurses once per level): the log holds only what the runtime
// wrote from bounded values.
#include "core/json_reader.h"
#include "fuzz_check.h"

namespace {

using marathon::json;
using marathon::fuzz::expect;

const std::string_view kNames[] = {"message", "output", "arguments", "a"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<std::string_view> leave_out;
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (data[0] & (1u << i)) leave_out.push_back(kNames[i]);
  }
  const std::string_view text = marathon::fuzz::bytes(data + 1, size - 1);

  json expected = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const bool refused = expected.is_discarded();

  marathon::OutsideJson outside = marathon::read_outside_json(text);
  const bool too_deep = !outside.ok() && outside.error.rfind("JSON nested deeper than", 0) == 0;
  expect(outside.ok() == !outside.value.is_discarded(), "a refusal with a value, or the reverse");
  expect(outside.error.size() < 500,
         "a refusal reason of " + std::to_string(outside.error.size()) + " bytes");
  for (unsigned char c : outside.error) {
    expect(c >= 0x20 && c < 0x7f, "a refusal reason with a byte outside printable ASCII");
  }
  if (refused) {
    expect(!outside.ok(),
           "read_outside_json accepted what json::parse refuses: " + outside.value.dump());
  } else if (!too_deep) {
    expect(outside.ok(), "read_outside_json refused what json::parse accepts: " + outside.error);
    expect(
        outside.value.dump() == expected.dump(),
        "read_outside_json gave " + outside.value.dump() + ", json::parse gave " + expected.dump());
  }
  if (too_deep) return 0;  // expected holds values nested past the bound: destroyed, not dumped

  if (!refused && expected.is_object()) {
    for (std::string_view k : leave_out) expected.erase(std::string(k));
  }
  json got;
  try {
    got = marathon::parse_json(text, leave_out);
  } catch (const json::exception& e) {
    expect(refused, std::string("parse_json refused what json::parse accepts: ") + e.what());
    return 0;
  }
  if (refused) {
    // Left-out members are skipped unchecked, so only a full parse must refuse.
    expect(!leave_out.empty(), "parse_json accepted what json::parse refuses: " + got.dump());
    return 0;
  }
  expect(got.dump() == expected.dump(),
         "parse_json gave " + got.dump() + ", json::parse gave " + expected.dump());
  return 0;
}
