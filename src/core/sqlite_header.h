// Checks of a SQLite file's first bytes and size, done before SQLite itself touches the file.
// Pure functions (no I/O) so that each way a file can be damaged is tested directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace marathon::detail {

inline constexpr size_t kSqliteHeaderSize = 100;

// `head` holds the file's first bytes (up to 100), `file_size` its size, `wal_size` the size of its
// -wal file (0 if none). Returns what is wrong, or nullopt if the header is plausible.
std::optional<std::string> check_sqlite_header(std::string_view head, uint64_t file_size,
                                               uint64_t wal_size);

}  // namespace marathon::detail
