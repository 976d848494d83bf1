// Fuzz target: parse_json (core/json_reader.cc), the reader every payload in the log goes through,
// checked against json::parse. The first input byte picks the top-level members to leave out
// (fold's projection); the rest is the text.
// Contract held (core/json_reader.h): with nothing left out, the same value as json::parse or the
// same refusal (a json::exception); with members left out, when json::parse accepts the text, the
// same value less those members.
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
