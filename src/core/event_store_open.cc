// EventStore::open: creating a log atomically, and checking an existing file before writing to it.
// A file is checked through a read-only connection (header bytes, PRAGMA quick_check, meta table)
// and only then opened for writing, so a rejected file is never modified.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <utility>

#include "core/event_store.h"
#include "core/schema.h"
#include "core/sqlite_header.h"
#include "core/sqlite_stmt.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using detail::exec;
using detail::Stmt;

constexpr const char* kFormat = "marathon-event-log";
constexpr int kBusyTimeoutMs = 10000;

[[noreturn]] void reject(const std::string& path, const std::string& why) {
  throw StoreError("event log " + path + ": " + why);
}

uint64_t size_or_zero(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// Opens `path` (or, when given, the URI naming it with parameters); errors name `path`.
sqlite3* open_connection(const std::string& path, int flags, const std::string& uri = "") {
  sqlite3* db = nullptr;
  int rc = uri.empty() ? sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr)
                       : sqlite3_open_v2(uri.c_str(), &db,
                                         flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    reject(path, "cannot open: " + msg);
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // Reads through a memory map: folding a large log then copies no pages.
  sqlite3_exec(db, "PRAGMA mmap_size=1073741824", nullptr, nullptr, nullptr);
  return db;
}

void configure_writer(sqlite3* db, const std::string& path) {
  Stmt wal(db, path, "PRAGMA journal_mode=WAL");
  if (!wal.step() || wal.text(0) != "wal") reject(path, "cannot switch to WAL journal mode");
  exec(db, path, "PRAGMA synchronous=FULL");
  // A writer (a runner) appends for hours and reads little (it starts from a fold checkpoint):
  // log pages it touched through a memory map would stay in its resident set as the log grows, so
  // it reads through SQLite's bounded page cache instead. Readers (status, fold) keep the map.
  exec(db, path, "PRAGMA mmap_size=0");
}

// The log files this process holds connections to, by connection: (device, inode). POSIX record
// locks belong to a process, and closing any descriptor of a file drops all of them, those of
// SQLite's connections included. SQLite keeps its own descriptors for that reason; the raw check
// below opens and closes one, so it is skipped for a file this process already holds (that
// connection's open checked it). Otherwise another process closing its last connection would find
// none of ours, checkpoint and delete the WAL under them, and they would read a malformed database
// (a control server holding a reader while a goal verb opens the same log for writing did).
class HeldFiles {
 public:
  static HeldFiles& instance() {
    static HeldFiles h;
    return h;
  }
  void hold(sqlite3* db, const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    by_db_[db] = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  }
  void release(sqlite3* db) {
    std::lock_guard<std::mutex> lock(mu_);
    by_db_.erase(db);
  }
  bool held(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return false;
    std::pair<uint64_t, uint64_t> id{static_cast<uint64_t>(st.st_dev),
                                     static_cast<uint64_t>(st.st_ino)};
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [db, file] : by_db_) {
      if (file == id) return true;
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::map<sqlite3*, std::pair<uint64_t, uint64_t>> by_db_;
};

// Raw checks of the file before SQLite reads it.
void check_file(const std::string& path) {
  if (HeldFiles::instance().held(path)) return;  // checked when first opened; see HeldFiles
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) reject(path, "no such file");
  if (S_ISDIR(st.st_mode)) reject(path, "is a directory, not an event log file");
  std::ifstream in(path, std::ios::binary);
  if (!in) reject(path, "cannot read the file");
  std::string head(detail::kSqliteHeaderSize, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (auto why = detail::check_sqlite_header(head, static_cast<uint64_t>(st.st_size),
                                             size_or_zero(path + "-wal"))) {
    reject(path, *why);
  }
}

// Structural and format checks through a read-only connection.
void check_log(sqlite3* db, const std::string& path) {
  {
    Stmt qc(db, path, "PRAGMA quick_check(1)");
    if (!qc.step()) reject(path, "quick_check returned nothing");
    if (qc.text(0) != "ok") reject(path, "corrupted file: quick_check: " + std::string(qc.text(0)));
  }
  int tables = 0;
  {
    Stmt t(db, path,
           "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN "
           "('meta','events','blobs')");
    t.step();
    tables = static_cast<int>(t.int64(0));
  }
  if (tables != 3) {
    reject(path,
           "a SQLite database that is not a marathon event log (no meta/events/blobs tables)");
  }
  std::string format, version;
  {
    Stmt m(db, path, "SELECT key, value FROM meta WHERE key IN ('format','schema_version')");
    while (m.step()) {
      (m.text(0) == "format" ? format : version) = std::string(m.text(1));
    }
  }
  if (format != kFormat) {
    reject(path, "a SQLite database that is not a marathon event log (meta.format is '" + format +
                     "', expected '" + kFormat + "')");
  }
  int v = 0;
  try {
    v = std::stoi(version);
  } catch (const std::exception&) {
    reject(path, "meta.schema_version is not a number: '" + version + "'");
  }
  if (v > kSchemaVersion) {
    reject(path, "written by a newer marathon (schema_version " + std::to_string(v) +
                     "; this binary reads up to " + std::to_string(kSchemaVersion) + ")");
  }
  if (v < 1) reject(path, "invalid schema_version " + std::to_string(v));
}

// Opens `path` (or `uri`) read-only and checks it. On rejection, removes the -wal/-shm files that
// opening created (the file itself is never written) and rethrows.
sqlite3* open_checked_read_only(const std::string& path, const std::string& uri = "") {
  check_file(path);
  bool had_wal = exists(path + "-wal"), had_shm = exists(path + "-shm");
  sqlite3* db = nullptr;
  try {
    db = open_connection(path, SQLITE_OPEN_READONLY, uri);
    check_log(db, path);
    return db;
  } catch (...) {
    sqlite3_close(db);
    if (!had_wal) ::unlink((path + "-wal").c_str());
    if (!had_shm) ::unlink((path + "-shm").c_str());
    throw;
  }
}

// "file:" and the absolute path, percent-encoded where a URI needs it, for `parameters`.
std::string file_uri(const std::string& path, const std::string& parameters) {
  static const char* kHex = "0123456789ABCDEF";
  std::string abs = fs::absolute(path).lexically_normal().string(), out = "file:";
  for (unsigned char c : abs) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out + "?" + parameters;
}

// False when the folder of `path` cannot be written (read-only media, no permission): SQLite then
// cannot make the -wal/-shm files that reading a WAL log normally needs.
bool folder_writable(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return ::access(parent.empty() ? "." : parent.c_str(), W_OK) == 0;
}

// Copies the log and its WAL into a private temporary folder (returned, with the copy's path in
// *copy): the only way to read a WAL whose folder holds no -shm and cannot get one.
std::string copy_to_temp(const std::string& path, std::string* copy) {
  std::string tmpl = (fs::temp_directory_path() / "marathon-ro-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    reject(path, std::string("read-only, and no temporary folder to read a copy in: ") +
                     std::strerror(errno));
  }
  std::error_code ec;
  *copy = (fs::path(tmpl) / fs::path(path).filename()).string();
  fs::copy_file(path, *copy, ec);
  if (!ec) fs::copy_file(path + "-wal", *copy + "-wal", ec);
  if (ec) {
    fs::remove_all(tmpl, ec);
    reject(path, "read-only, and copying it to read its WAL failed: " + ec.message());
  }
  return tmpl;
}

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Builds the schema in a temporary file and links it into place, so `path` either does not exist
// or holds a complete, empty log.
void create_file(const std::string& path) {
  if (exists(path) && size_or_zero(path) > 0)
    reject(path, "cannot create: the file already exists");
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent)) {
    reject(path, "cannot create: directory " + parent.string() + " does not exist");
  }
  std::string tmp = path + ".creating-" + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  sqlite3* db = open_connection(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  try {
    auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    // WAL before the schema: the journal mode lives in the file header, so the linked file is a
    // WAL log from its first byte. Switching a linked file later would go through a rollback
    // journal, and a writer killed during that switch would leave a hot journal that no
    // read-only open (marathon status) can roll back.
    configure_writer(db, tmp);
    exec(db, tmp, "BEGIN;");
    exec(db, tmp, detail::kCreateTables);
    exec(db, tmp, detail::kCreateCheckpointsTable);
    Stmt ins(db, tmp, "INSERT INTO meta(key, value) VALUES (?, ?)");
    for (auto [k, v] : {std::pair<std::string, std::string>{"format", kFormat},
                        {"schema_version", std::to_string(kSchemaVersion)},
                        {"run_id", ""},
                        {"created_at", std::to_string(now_us)}}) {
      ins.bind(1, k).bind(2, v);
      ins.step();
      ins.reset();
    }
    exec(db, tmp, "COMMIT");
  } catch (...) {
    sqlite3_close(db);
    ::unlink(tmp.c_str());
    throw;
  }
  sqlite3_close(db);
  if (exists(path)) ::unlink(path.c_str());  // an empty file left by a previous attempt
  int rc = ::link(tmp.c_str(), path.c_str());
  ::unlink(tmp.c_str());
  if (rc != 0) reject(path, "cannot create: the file appeared while it was being created");
  fsync_dir(parent);
}

}  // namespace

std::unique_ptr<EventStore> EventStore::open(const std::string& path, Mode mode) {
  sqlite3* db = nullptr;
  switch (mode) {
    case Mode::kCreate:
      create_file(path);
      db = open_connection(path, SQLITE_OPEN_READWRITE);
      break;
    case Mode::kReadOnly: {
      if (!folder_writable(path)) return open_on_read_only_media(path);
      // The checked file is then read through a read-write connection made query-only: as the
      // last connection to close it removes the -wal/-shm files, which a read-only connection
      // would leave behind. A file we may not write is read through a read-only one.
      sqlite3_close(open_checked_read_only(path));
      try {
        db = open_connection(path, SQLITE_OPEN_READWRITE);
        exec(db, path, "PRAGMA query_only=1");
      } catch (const StoreError&) {
        sqlite3_close(db);
        db = open_connection(path, SQLITE_OPEN_READONLY);
      }
      return std::unique_ptr<EventStore>(new EventStore(db, path, true));
    }
    case Mode::kOpen:
      sqlite3_close(open_checked_read_only(path));
      db = open_connection(path, SQLITE_OPEN_READWRITE);
      break;
  }
  try {
    configure_writer(db, path);
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  std::unique_ptr<EventStore> store(new EventStore(db, path, false));
  store->record_files();
  return store;
}

// A log in a folder that cannot be written (a read-only mount, an archive): no -wal/-shm can be
// made next to it, so it is read
//  - with no WAL (or an empty one): as immutable, which needs neither file;
//  - with a WAL and its -shm: read-only, SQLite reading the -shm without writing it;
//  - with a WAL and no -shm: through a private copy of both in the temporary folder.
std::unique_ptr<EventStore> EventStore::open_on_read_only_media(const std::string& path) {
  sqlite3* db = nullptr;
  if (size_or_zero(path + "-wal") == 0) {
    db = open_checked_read_only(path, file_uri(path, "immutable=1"));
    return std::unique_ptr<EventStore>(new EventStore(db, path, true));
  }
  if (exists(path + "-shm")) {
    try {
      db = open_checked_read_only(path);
      return std::unique_ptr<EventStore>(new EventStore(db, path, true));
    } catch (const StoreError&) {
      // an -shm that cannot be read: the copy below needs none
    }
  }
  std::string copy;
  std::string dir = copy_to_temp(path, &copy);
  try {
    sqlite3_close(open_checked_read_only(copy));
    db = open_connection(copy, SQLITE_OPEN_READWRITE);
    exec(db, copy, "PRAGMA query_only=1");
  } catch (...) {
    sqlite3_close(db);
    std::error_code ec;
    fs::remove_all(dir, ec);
    throw;
  }
  std::unique_ptr<EventStore> store(new EventStore(db, path, true));
  HeldFiles::instance().release(db);  // its connection is to the copy, not to `path`
  store->temp_copy_dir_ = dir;
  return store;
}

EventStore::EventStore(sqlite3* db, std::string path, bool read_only)
    : db_(db), path_(std::move(path)), read_only_(read_only) {
  HeldFiles::instance().hold(db_, path_);
}

EventStore::~EventStore() {
  HeldFiles::instance().release(db_);
  sqlite3_close(db_);
  if (!temp_copy_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(temp_copy_dir_, ec);
  }
}

}  // namespace marathon
