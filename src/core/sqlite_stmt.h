// A prepared SQLite statement with RAII, and the error text the store reports (internal to core).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/event_store.h"

namespace marathon::detail {

// "event log FILE: WHAT: sqlite's message". Corruption codes get the word "corrupted"; a full
// disk says what to do (the failed transaction left nothing, what was committed stays).
[[noreturn]] void throw_sqlite(sqlite3* db, const std::string& path, const std::string& what);

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind_blob(int i, std::string_view v);
  // Returns true when a row is ready, false when done; throws StoreError otherwise.
  bool step();
  void reset();

  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string_view text(int col) const;
  std::string_view blob(int col) const;
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Runs SQL with no result rows (may hold several statements).
void exec(sqlite3* db, const std::string& path, const char* sql);

// BEGIN IMMEDIATE ... COMMIT; rolls back unless committed.
class WriteTx {
 public:
  WriteTx(sqlite3* db, const std::string& path) : db_(db), path_(path) {
    exec(db, path, "BEGIN IMMEDIATE");
  }
  ~WriteTx() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  WriteTx(const WriteTx&) = delete;
  WriteTx& operator=(const WriteTx&) = delete;
  void commit() {
    exec(db_, path_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

}  // namespace marathon::detail
