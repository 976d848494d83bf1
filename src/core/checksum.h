// Checksum64: the row checksum of the log (docs/event-log.md): the first 8 bytes, big-endian, of a
// sha256 over length-prefixed fields. Integers are 8 little-endian bytes; strings an 8-byte
// little-endian length, then the bytes. Internal to core.
#pragma once

#include <cstdint>
#include <string_view>

struct evp_md_ctx_st;

namespace marathon::detail {

class Checksum64 {
 public:
  Checksum64();  // one hashing context per thread, reused: creating one costs more than a row
  Checksum64& add(int64_t v);
  Checksum64& add(std::string_view s);
  int64_t value();

 private:
  evp_md_ctx_st* ctx_;
};

}  // namespace marathon::detail
