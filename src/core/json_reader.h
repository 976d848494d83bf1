// parse_json: JSON text to nlohmann::json, about 3x faster than json::parse on event payloads,
// and able to leave out top-level members without building them (fold's projection).
// read_outside_json: the one reader of JSON that comes from outside the runtime (provider replies
// and their stream events, JSON-RPC and MCP lines, tool arguments, evaluator output, HTTP bodies),
// bounded while it parses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/event.h"

namespace marathon {

// The same value json::parse(text) gives, less the top-level members named in `leave_out`
// (their text is skipped, not validated). Any text this reader does not accept (malformed, or
// nested deeper than it goes) is handed to json::parse, so errors are json::parse's exceptions.
json parse_json(std::string_view text, const std::vector<std::string_view>& leave_out = {});

// How deep arrays and objects may nest in JSON from outside: a top-level [] is one level. Deeper
// text is refused while it is read, so nothing nested past it is ever built (copying, dumping or
// comparing a value recurses once per level; 200,000 levels overflow the stack).
constexpr int kMaxOutsideJsonDepth = 256;

// What read_outside_json gives: the value, or why the text was refused.
struct OutsideJson {
  json value = json(json::value_t::discarded);  // discarded when refused
  std::string error;                            // empty when read; else one line of <= ~400 bytes
  bool ok() const { return error.empty(); }
};

// JSON text from outside (hostile) bytes. Refused, during parsing and before anything is built
// past the refusal point: nesting deeper than `max_depth`, a number no double holds (1e400,
// -1e400, a 400-digit integer), and everything json::parse refuses (syntax, ill-formed UTF-8,
// trailing bytes). Accepted text gives the value json::parse gives. Never throws a json::exception;
// the error names what was wrong ("nested deeper than 256 levels", "number overflow ...", or the
// parse error with its position) with any quoted input cut to a bounded excerpt.
OutsideJson read_outside_json(std::string_view text, int max_depth = kMaxOutsideJsonDepth);

}  // namespace marathon
