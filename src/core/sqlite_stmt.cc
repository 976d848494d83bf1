#include "core/sqlite_stmt.h"

namespace marathon::detail {

void throw_sqlite(sqlite3* db, const std::string& path, const std::string& what) {
  int code = db ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
  int primary = code & 0xff;
  std::string kind;
  if (primary == SQLITE_CORRUPT) kind = "corrupted file: ";
  if (primary == SQLITE_NOTADB) kind = "not a SQLite database: ";
  std::string hint;
  if (primary == SQLITE_FULL) {
    hint =
        "; the disk is full: nothing committed is lost, free space and run `marathon resume` "
        "on the run directory";
  }
  throw StoreError("event log " + path + ": " + kind + what + ": " + msg + " (sqlite code " +
                   std::to_string(code) + ")" + hint);
}

Stmt::Stmt(sqlite3* db, const std::string& path, std::string_view sql) : db_(db), path_(path) {
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
      SQLITE_OK) {
    throw_sqlite(db, path, "preparing '" + std::string(sql) + "'");
  }
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::bind_blob(int i, std::string_view v) {
  sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  std::string sql = sqlite3_sql(stmt_) ? sqlite3_sql(stmt_) : "";
  throw_sqlite(db_, path_, "running '" + sql + "'");
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string_view Stmt::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string_view(reinterpret_cast<const char*>(p), n) : std::string_view();
}

std::string_view Stmt::blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string_view(static_cast<const char*>(p), n) : std::string_view();
}

void exec(sqlite3* db, const std::string& path, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    sqlite3_free(err);
    throw_sqlite(db, path, std::string("running '") + sql + "'");
  }
}

}  // namespace marathon::detail
