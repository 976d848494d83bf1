// EventStore: one SQLite database per run (<run-dir>/events.db), append-only.
// WAL mode and synchronous=FULL: an event is durable when append() returns. Readers in other
// processes (status, log --follow, the dashboard) see a consistent prefix while the runner writes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/event.h"

struct sqlite3;

namespace marathon {

// Any failure to open, read or write a log. what() names the file and the problem.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kSchemaVersion = 1;

class EventStore {
 public:
  enum class Mode {
    kCreate,    // new run: the file must not exist (or be empty of tables); creates the schema
    kOpen,      // existing log, read-write; checks schema version and integrity
    kReadOnly,  // existing log, never written (status, log, export)
  };

  // Throws StoreError naming `path` for: missing file (kOpen/kReadOnly), a file that is not SQLite,
  // a SQLite file that is not a marathon log, a log from a newer schema, a corrupted or truncated
  // file. Never modifies a file it rejects.
  static std::unique_ptr<EventStore> open(const std::string& path, Mode mode);
  ~EventStore();
  EventStore(const EventStore&) = delete;
  EventStore& operator=(const EventStore&) = delete;

  // Appends one event in its own transaction; returns the stored event (seq, id, recorded_at set).
  Event append(const NewEvent& e);
  // Appends all events in one transaction: all or none are durable when it returns.
  std::vector<Event> append_batch(const std::vector<NewEvent>& events);

  // Events with from_seq <= seq <= to_seq, in order.
  std::vector<Event> read(int64_t from_seq = 1, int64_t to_seq = INT64_MAX) const;
  // Streams events without holding them all; f returns false to stop.
  void for_each(int64_t from_seq, const std::function<bool(const Event&)>& f) const;

  // Top-level payload members to leave out for some event types: {type, {"$.name", ...}}. A reader
  // that needs few fields (fold) skips building bulky values this way; checksums are still
  // verified on the full text, but the text of a left-out member is not parsed.
  using Projection = std::vector<std::pair<std::string, std::vector<std::string>>>;
  void for_each(int64_t from_seq, const Projection& leave_out,
                const std::function<bool(const Event&)>& f) const;
  int64_t last_seq() const;
  std::optional<Event> find_by_id(const std::string& id) const;

  // Content-addressed blobs: put returns the lowercase hex sha256; storing the same bytes twice is
  // a no-op. put_blob is durable when it returns.
  std::string put_blob(const std::string& bytes);
  std::optional<std::string> get_blob(const std::string& sha256) const;
  bool has_blob(const std::string& sha256) const;

  // Copies events verbatim (seq, id, recorded_at and all) in one transaction. Their seqs must
  // continue this log densely (fork and replay build a new log from an old one's prefix).
  void import_events(const std::vector<Event>& events);

  // Fold checkpoints (core/checkpoint.h, docs/event-log.md): a folded State stored at a seq.
  // Derived data: deleting or damaging one loses nothing, readers verify it and fold events
  // instead.
  struct Checkpoint {
    int64_t seq = 0;
    int fold_version = 0;
    std::string event_id;      // the id of the event at `seq` when the checkpoint was written
    std::string log_event_id;  // the id of the event at `seq` now (empty: none)
    std::string state;         // JSON text
    bool checksum_ok = false;  // the row's checksum matches its fields
  };
  // Stores a checkpoint of the events up to `seq` in one transaction and keeps only the newest
  // `keep` checkpoints of `fold_version` (older ones, and all of other versions, are deleted).
  // Throws StoreError when the log has no event at `seq`.
  void put_checkpoint(int64_t seq, int fold_version, std::string_view state_json, int keep);
  // Checkpoints of `fold_version` with seq <= max_seq, newest first; f returns false to stop.
  void for_each_checkpoint(int fold_version, int64_t max_seq,
                           const std::function<bool(const Checkpoint&)>& f) const;
  // The seq of the newest checkpoint of `fold_version`; 0 when there is none.
  int64_t last_checkpoint_seq(int fold_version) const;

  // A row of the meta table (format, schema_version, run_id, created_at), if present.
  std::optional<std::string> meta(const std::string& key) const;

  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }

  // A check run before every write (append, import, blob, checkpoint); it throws to refuse the
  // write. The runner passes its run directory's lock check (core/run_lock.h).
  void set_write_guard(std::function<void()> guard) { write_guard_ = std::move(guard); }

 private:
  // The identity of a file this writer uses (device and inode).
  struct FileId {
    uint64_t dev = 0, ino = 0;
    bool known = false;
  };
  EventStore(sqlite3* db, std::string path, bool read_only);
  static std::unique_ptr<EventStore> open_on_read_only_media(const std::string& path);
  // Writers: the log file, its -wal and -shm must be the files this connection opened, before
  // and after every write. A file removed or replaced under a running writer means later commits
  // land where no reader (and no resume) will find them, so the store refuses every write from
  // then on with a StoreError saying which file changed (event_store_files.cc).
  void record_files();
  void check_files();
  void refuse_writes(const std::string& why);
  void insert_locked(Event& e, void* insert_stmt);  // inside a write transaction
  // Events from_seq..to_seq in order; f may move from the event it is given.
  void scan(int64_t from_seq, int64_t to_seq, const Projection& leave_out,
            const std::function<bool(Event&)>& f) const;
  sqlite3* db_;
  std::string path_;
  bool read_only_;
  std::function<void()> write_guard_;
  FileId db_id_, wal_id_, shm_id_;
  std::string broken_;         // why writes are refused, once a check failed
  std::string temp_copy_dir_;  // a private copy of a read-only log with a WAL (removed on close)
};

std::string sha256_hex(const std::string& bytes);

}  // namespace marathon
