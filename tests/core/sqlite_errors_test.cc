// The store's SQLite errors as the user reads them: a full disk says that nothing committed is lost
// and how to go on.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "core/sqlite_stmt.h"

namespace marathon::detail {
namespace {

// SQLITE_FULL the way a full disk gives it, from a database that may not grow (max_page_count).
std::string full_database_error() {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA max_page_count=2; CREATE TABLE t(x BLOB)", nullptr, nullptr, nullptr);
  int rc = SQLITE_OK;
  for (int i = 0; i < 100 && rc == SQLITE_OK; ++i) {
    rc = sqlite3_exec(db, "INSERT INTO t VALUES (randomblob(4000))", nullptr, nullptr, nullptr);
  }
  EXPECT_EQ(rc & 0xff, SQLITE_FULL);
  std::string what;
  try {
    throw_sqlite(db, "run/events.db", "running 'COMMIT'");
  } catch (const StoreError& e) {
    what = e.what();
  }
  sqlite3_close(db);
  return what;
}

TEST(SqliteErrors, AFullDiskSaysNothingCommittedIsLostAndHowToGoOn) {
  const std::string what = full_database_error();
  EXPECT_NE(what.find("event log run/events.db: running 'COMMIT'"), std::string::npos) << what;
  EXPECT_NE(what.find("the disk is full"), std::string::npos) << what;
  EXPECT_NE(what.find("marathon resume"), std::string::npos) << what;
}

TEST(SqliteErrors, OtherErrorsGiveNoDiskHint) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(db, "SELECT * FROM missing", nullptr, nullptr, nullptr), SQLITE_OK);
  std::string what;
  try {
    throw_sqlite(db, "run/events.db", "reading");
  } catch (const StoreError& e) {
    what = e.what();
  }
  sqlite3_close(db);
  EXPECT_NE(what.find("no such table"), std::string::npos) << what;
  EXPECT_EQ(what.find("disk is full"), std::string::npos) << what;
}

}  // namespace
}  // namespace marathon::detail
