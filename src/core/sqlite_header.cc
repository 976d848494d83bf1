#include "core/sqlite_header.h"

#include <cstring>

namespace marathon::detail {
namespace {
uint32_t be(std::string_view b, size_t off, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(b[off + i]);
  return v;
}
}  // namespace

std::optional<std::string> check_sqlite_header(std::string_view head, uint64_t file_size,
                                               uint64_t wal_size) {
  static constexpr char kMagic[] = "SQLite format 3";  // followed by a NUL: 16 bytes
  if (file_size == 0) return "empty file (0 bytes), not a marathon event log";
  if (head.size() < 16 || std::memcmp(head.data(), kMagic, 16) != 0) {
    return "not a SQLite database (the file does not start with the SQLite header)";
  }
  if (file_size < kSqliteHeaderSize || head.size() < kSqliteHeaderSize) {
    return "truncated file (" + std::to_string(file_size) +
           " bytes, shorter than the 100-byte SQLite header)";
  }
  uint32_t page_size = be(head, 16, 2);
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)) != 0) {
    return "corrupted file header (page size " + std::to_string(page_size) + ")";
  }
  if (file_size % page_size != 0) {
    return "truncated or damaged file (" + std::to_string(file_size) +
           " bytes is not a whole number of " + std::to_string(page_size) + "-byte pages)";
  }
  // The page count at offset 28 is valid when the change counter (24) equals the
  // version-valid-for number (92). With a non-empty WAL the WAL holds the newer size.
  uint32_t pages = be(head, 28, 4);
  bool count_valid = pages > 0 && be(head, 24, 4) == be(head, 92, 4);
  if (count_valid && wal_size == 0 && file_size < uint64_t(pages) * page_size) {
    return "truncated file (header says " + std::to_string(pages) + " pages of " +
           std::to_string(page_size) + " bytes, the file has " + std::to_string(file_size) +
           " bytes)";
  }
  return std::nullopt;
}

}  // namespace marathon::detail
