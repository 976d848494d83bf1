// What the fuzz targets share: a failed expectation ends the process the way libFuzzer records a
// crash (abort, the input saved as an artifact), with a message naming what was broken.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace marathon::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "FUZZ EXPECTATION FAILED: %s\n", what.c_str());
  std::abort();
}

inline void expect(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

inline std::string_view bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace marathon::fuzz
