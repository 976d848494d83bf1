// Damaged and foreign files: each is a clear StoreError naming the file, `marathon status` exits
// non-zero without crashing, and the file is byte-identical afterwards (no -wal/-shm left either).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "cli_runner.h"
#include "core/event_store.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "test_dir.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;

constexpr const char* kMarker = "MARKER-the-kernel-uses-128x128-tiles";

// A run dir with a valid, closed (checkpointed) log of a few hundred events.
RunDir make_run(const TempDir& d) {
  RunDir r = create_run_dir(d.path() / "run");
  auto s = EventStore::open(r.events_db().string(), EventStore::Mode::kCreate);
  NewEvent c;
  c.type = events::RunCreated::kType;
  c.payload = {{"run_id", "run-c"}, {"goal", {{"objective", "x"}}}};
  s->append(c);
  std::vector<NewEvent> batch;
  for (int i = 0; i < 300; ++i) {
    NewEvent n;
    n.type = events::LedgerNoted::kType;
    n.payload = {{"kind", "finding"},
                 {"text", i == 150 ? kMarker : std::string(200, 'a' + i % 26)}};
    batch.push_back(n);
  }
  s->append_batch(batch);
  s->put_blob(std::string(10000, 'b'));
  return r;
}

void run_sql(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// Opening `path` (read-only and read-write) and folding it must fail with a StoreError naming the
// file and containing `expect`; `marathon status` must exit 1 with that message; and neither may
// change the file or leave -wal/-shm files next to it.
void expect_rejected(const TempDir& d, const RunDir& run, const std::string& expect) {
  std::string path = run.events_db().string();
  std::string before = read_file(path);
  bool had_wal = fs::exists(path + "-wal"), had_shm = fs::exists(path + "-shm");
  for (auto mode : {EventStore::Mode::kReadOnly, EventStore::Mode::kOpen}) {
    try {
      auto s = EventStore::open(path, mode);
      load_state(*s);
      ADD_FAILURE() << "a damaged log was accepted (expected: " << expect << ")";
    } catch (const StoreError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(expect), std::string::npos) << what;
    }
  }
  testing::CliResult r = run_cli(d, "status " + testing::shell_quote(run.root.string()));
  EXPECT_TRUE(r.exited) << "marathon status crashed";
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(expect), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_EQ(sha256_hex(read_file(path)), sha256_hex(before)) << "the rejected file was modified";
  EXPECT_EQ(fs::exists(path + "-wal"), had_wal) << "a -wal file was left behind";
  EXPECT_EQ(fs::exists(path + "-shm"), had_shm) << "a -shm file was left behind";
}

TEST(Corruption, ValidLogPassesTheSameChecks) {
  TempDir d;
  RunDir run = make_run(d);
  auto s = EventStore::open(run.events_db().string(), EventStore::Mode::kOpen);
  EXPECT_EQ(load_state(*s).last_seq, 301);
  testing::CliResult r = run_cli(d, "status --json " + run.root.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["events"], 301);
}

TEST(Corruption, EmptyFileIsRejected) {
  TempDir d;
  RunDir run = create_run_dir(d.path() / "run");
  write_file(run.events_db(), "");
  expect_rejected(d, run, "empty file");
}

TEST(Corruption, TextFileIsNotSqlite) {
  TempDir d;
  RunDir run = create_run_dir(d.path() / "run");
  write_file(run.events_db(), "{\"seq\": 1, \"type\": \"run.created\"}\n");
  expect_rejected(d, run, "not a SQLite database");
}

TEST(Corruption, TruncatedAtAPageBoundaryIsRejected) {
  TempDir d;
  RunDir run = make_run(d);
  std::string bytes = read_file(run.events_db());
  ASSERT_GT(bytes.size(), 8 * 4096u);
  write_file(run.events_db(), bytes.substr(0, 4 * 4096));
  expect_rejected(d, run, "truncated");
}

TEST(Corruption, TruncatedMidPageIsRejected) {
  TempDir d;
  RunDir run = make_run(d);
  std::string bytes = read_file(run.events_db());
  write_file(run.events_db(), bytes.substr(0, bytes.size() - 1000));
  expect_rejected(d, run, "truncated");
}

TEST(Corruption, TruncatedInsideTheHeaderIsRejected) {
  TempDir d;
  RunDir run = make_run(d);
  write_file(run.events_db(), read_file(run.events_db()).substr(0, 60));
  expect_rejected(d, run, "truncated");
}

TEST(Corruption, FlippedBytesInAnEventPayloadAreCaughtByTheChecksum) {
  TempDir d;
  RunDir run = make_run(d);
  std::string bytes = read_file(run.events_db());
  size_t at = bytes.find(kMarker);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 10] ^= 0x01;  // still valid text and JSON: only the checksum can tell
  write_file(run.events_db(), bytes);
  expect_rejected(d, run, "checksum mismatch");
}

TEST(Corruption, FlippedBytesInAPageHeaderAreCorruption) {
  TempDir d;
  RunDir run = make_run(d);
  std::string bytes = read_file(run.events_db());
  for (size_t page = 1; page * 4096 < bytes.size(); ++page) {
    bytes[page * 4096] ^= 0x5a;  // the b-tree page type byte of every page after the first
    bytes[page * 4096 + 3] ^= 0x5a;
  }
  write_file(run.events_db(), bytes);
  expect_rejected(d, run, "corrupted");
}

TEST(Corruption, FlippedBytesInTheFileHeaderAreRejected) {
  TempDir d;
  RunDir run = make_run(d);
  std::string bytes = read_file(run.events_db());
  bytes[3] ^= 0x20;  // "SQLite" -> "SQlite"
  write_file(run.events_db(), bytes);
  expect_rejected(d, run, "not a SQLite database");
}

TEST(Corruption, ForeignSqliteDatabaseIsNotALog) {
  TempDir d;
  RunDir run = create_run_dir(d.path() / "run");
  run_sql(
      run.events_db().string(),
      "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1,'a');");
  expect_rejected(d, run, "not a marathon event log");
}

TEST(Corruption, ForeignWalModeSqliteLeavesNoWalFiles) {
  TempDir d;
  RunDir run = create_run_dir(d.path() / "run");
  run_sql(run.events_db().string(),
          "PRAGMA journal_mode=WAL; CREATE TABLE t(x); INSERT INTO t VALUES(1);");
  ASSERT_FALSE(fs::exists(run.events_db().string() + "-wal"));
  expect_rejected(d, run, "not a marathon event log");
}

TEST(Corruption, ForeignSqliteWithAMetaTableIsNotALog) {
  TempDir d;
  RunDir run = create_run_dir(d.path() / "run");
  run_sql(run.events_db().string(),
          "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT); CREATE TABLE events(x); "
          "CREATE TABLE blobs(y); INSERT INTO meta VALUES ('format','something-else');");
  expect_rejected(d, run, "not a marathon event log");
}

TEST(Corruption, NewerSchemaIsRefusedNotGuessed) {
  TempDir d;
  RunDir run = make_run(d);
  run_sql(run.events_db().string(), "UPDATE meta SET value='99' WHERE key='schema_version'");
  expect_rejected(d, run, "newer marathon (schema_version 99");
}

TEST(Corruption, NotARunDirectoryIsAClearError) {
  TempDir d;
  testing::CliResult r = run_cli(d, "status " + (d / "missing"));
  EXPECT_EQ(r.code, 2);  // a usage error: docs/operations.md, "Exit codes"
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  fs::create_directories(d.path() / "empty");
  r = run_cli(d, "status " + (d / "empty"));
  EXPECT_EQ(r.code, 2);  // a usage error: docs/operations.md, "Exit codes"
  EXPECT_NE(r.err.find("no events.db"), std::string::npos) << r.err;
  fs::create_directories(d.path() / "dirdb" / "events.db");
  r = run_cli(d, "status " + (d / "dirdb"));
  EXPECT_EQ(r.code, 1);  // a run folder whose log cannot be opened: the work failed
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace marathon
