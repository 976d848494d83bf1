#include "core/sqlite_header.h"

#include <gtest/gtest.h>

namespace marathon::detail {
namespace {

std::string header(uint16_t page_size, uint32_t pages, bool count_valid = true) {
  std::string h(100, '\0');
  std::string magic = "SQLite format 3";
  h.replace(0, magic.size(), magic);
  h[16] = static_cast<char>(page_size >> 8);
  h[17] = static_cast<char>(page_size & 0xff);
  for (int i = 0; i < 4; ++i) h[28 + i] = static_cast<char>(pages >> (24 - 8 * i));
  h[27] = 5;                    // change counter
  h[95] = count_valid ? 5 : 4;  // version-valid-for
  return h;
}

TEST(SqliteHeader, PlausibleHeaderPasses) {
  EXPECT_FALSE(check_sqlite_header(header(4096, 3), 3 * 4096, 0));
}

TEST(SqliteHeader, EmptyFileIsNamedEmpty) {
  auto why = check_sqlite_header("", 0, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("empty"), std::string::npos);
}

TEST(SqliteHeader, ForeignBytesAreNotSqlite) {
  auto why = check_sqlite_header("hello world, not a database at all", 34, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("not a SQLite"), std::string::npos);
}

TEST(SqliteHeader, TruncatedInsideTheHeader) {
  auto why = check_sqlite_header(header(4096, 3).substr(0, 50), 50, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("truncated"), std::string::npos);
}

TEST(SqliteHeader, TruncatedMidPage) {
  auto why = check_sqlite_header(header(4096, 3), 2 * 4096 + 100, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("truncated"), std::string::npos);
}

TEST(SqliteHeader, TruncatedAtAPageBoundary) {
  auto why = check_sqlite_header(header(4096, 3), 2 * 4096, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("3 pages"), std::string::npos);
}

TEST(SqliteHeader, StalePageCountIsNotTrusted) {
  EXPECT_FALSE(check_sqlite_header(header(4096, 3, false), 2 * 4096, 0));
  EXPECT_FALSE(check_sqlite_header(header(4096, 3), 2 * 4096, /*wal_size=*/8192));
}

TEST(SqliteHeader, BadPageSizeIsCorruption) {
  auto why = check_sqlite_header(header(1000, 3), 3000, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("page size"), std::string::npos);
}

}  // namespace
}  // namespace marathon::detail
