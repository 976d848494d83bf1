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

  // Fields to leave out of the payloads of some event types: {type, {JSON path, ...}}, paths such
  // as "$.message". A reader that needs few fields (fold) skips parsing bulky text this way: SQLite
  // drops the fields before the payload is parsed. Checksums are still verified on the full text.
  // This form reads rows on a second thread while f runs: f must not use this store.
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

  // A row of the meta table (format, schema_version, run_id, created_at), if present.
  std::optional<std::string> meta(const std::string& key) const;

  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }

 private:
  EventStore(sqlite3* db, std::string path, bool read_only);
  void insert_locked(Event& e, void* insert_stmt);  // inside a write transaction
  sqlite3* db_;
  std::string path_;
  bool read_only_;
};

std::string sha256_hex(const std::string& bytes);

}  // namespace marathon
