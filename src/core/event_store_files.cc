// EventStore's watch over its own files. A writer's connection keeps using the files it opened:
// when events.db, events.db-wal or events.db-shm is removed or replaced under it (rm, mv, a
// restore from backup, a sync tool), SQLite goes on committing into a file nobody else will
// read, and every event it acknowledges after that is lost. So the paths are compared with the
// files opened (device and inode) before and after each write, and the first mismatch stops all
// writes with an error naming the file.
#include <sqlite3.h>
#include <sys/stat.h>

#include "core/event_store.h"
#include "core/sqlite_stmt.h"

namespace marathon {
namespace {

// The identity of the file at `path` now; unknown when there is none.
bool stat_id(const std::string& path, uint64_t* dev, uint64_t* ino) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  *dev = static_cast<uint64_t>(st.st_dev);
  *ino = static_cast<uint64_t>(st.st_ino);
  return true;
}

}  // namespace

void EventStore::record_files() {
  for (auto [id, suffix] :
       {std::pair<FileId*, const char*>{&db_id_, ""}, {&wal_id_, "-wal"}, {&shm_id_, "-shm"}}) {
    id->known = stat_id(path_ + suffix, &id->dev, &id->ino);
  }
}

void EventStore::refuse_writes(const std::string& why) {
  if (broken_.empty()) {
    broken_ = "event log " + path_ + ": " + why +
              "; this run stops writing so that it acknowledges no event it would lose. Check the "
              "run directory's files, then `marathon resume` it";
    // Closing must neither checkpoint into nor delete files that are no longer this
    // connection's: the -wal and -shm at these paths may now belong to another writer.
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  }
  throw StoreError(broken_);
}

void EventStore::check_files() {
  if (!broken_.empty()) throw StoreError(broken_);
  if (write_guard_) write_guard_();
  auto name = [&](const char* suffix) { return path_ + suffix; };
  uint64_t dev = 0, ino = 0;
  if (!stat_id(path_, &dev, &ino)) {
    refuse_writes(name("") + " was removed while the run was writing");
  }
  if (!db_id_.known || dev != db_id_.dev || ino != db_id_.ino) {
    refuse_writes(name("") + " was replaced by another file while the run was writing");
  }
  for (auto [id, suffix] :
       {std::pair<FileId*, const char*>{&wal_id_, "-wal"}, {&shm_id_, "-shm"}}) {
    bool there = stat_id(name(suffix), &dev, &ino);
    if (!id->known) {
      // Made by this connection's first transaction: from now on it must stay.
      if (there) *id = FileId{dev, ino, true};
      continue;
    }
    if (!there) {
      std::string why = name(suffix) + " was removed while the run was writing";
      if (std::string(suffix) == "-wal") {
        // The removed WAL holds events already acknowledged; this connection still has it open,
        // so they are copied into events.db (still the file opened: checked above) before
        // stopping. Nothing appended after this point is acknowledged.
        int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_FULL, nullptr, nullptr);
        why += rc == SQLITE_OK ? " (the events it held were copied into " + path_ + ")"
                               : " (copying the events it held into " + path_ +
                                     " failed: " + sqlite3_errmsg(db_) +
                                     "; events since the last checkpoint "
                                     "may be lost)";
      }
      refuse_writes(why);
    }
    if (dev != id->dev || ino != id->ino) {
      refuse_writes(name(suffix) + " was replaced by another file while the run was writing");
    }
  }
}

}  // namespace marathon
