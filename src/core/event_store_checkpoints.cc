// EventStore's checkpoint rows (the table is described in docs/event-log.md). Logs created before
// the table existed get it at their first checkpoint; until then they simply have none.
#include <sqlite3.h>

#include "core/checksum.h"
#include "core/event_store.h"
#include "core/schema.h"
#include "core/sqlite_stmt.h"

namespace marathon {
namespace {

using detail::Stmt;

int64_t checkpoint_checksum(int64_t seq, int64_t fold_version, std::string_view event_id,
                            std::string_view state) {
  return detail::Checksum64().add(seq).add(fold_version).add(event_id).add(state).value();
}

bool has_table(sqlite3* db, const std::string& path) {
  Stmt t(db, path, "SELECT 1 FROM sqlite_master WHERE type='table' AND name='checkpoints'");
  return t.step();
}

}  // namespace

void EventStore::put_checkpoint(int64_t seq, int fold_version, std::string_view state_json,
                                int keep) {
  if (read_only_) {
    throw StoreError("event log " + path_ + ": opened read-only, cannot store a checkpoint");
  }
  check_files();
  detail::WriteTx tx(db_, path_);
  detail::exec(db_, path_, detail::kCreateCheckpointsTable);
  std::string event_id;
  {
    Stmt s(db_, path_, "SELECT id FROM events WHERE seq = ?");
    s.bind(1, seq);
    if (!s.step()) {
      throw StoreError("event log " + path_ + ": cannot store a checkpoint at seq " +
                       std::to_string(seq) + ": the log has no such event");
    }
    event_id = s.text(0);
  }
  Stmt ins(db_, path_,
           "INSERT OR REPLACE INTO checkpoints(seq, fold_version, event_id, state, checksum) "
           "VALUES (?, ?, ?, ?, ?)");
  ins.bind(1, seq)
      .bind(2, static_cast<int64_t>(fold_version))
      .bind(3, event_id)
      .bind(4, state_json)
      .bind(5, checkpoint_checksum(seq, fold_version, event_id, state_json));
  ins.step();
  Stmt prune(db_, path_,
             "DELETE FROM checkpoints WHERE seq NOT IN (SELECT seq FROM checkpoints WHERE "
             "fold_version = ? ORDER BY seq DESC LIMIT ?)");
  prune.bind(1, static_cast<int64_t>(fold_version)).bind(2, static_cast<int64_t>(keep));
  prune.step();
  tx.commit();
  check_files();
}

void EventStore::for_each_checkpoint(int fold_version, int64_t max_seq,
                                     const std::function<bool(const Checkpoint&)>& f) const {
  if (!has_table(db_, path_)) return;
  // Newest first, one row at a time: a reader that accepts the newest never reads the others.
  std::vector<int64_t> seqs;
  {
    Stmt s(db_, path_,
           "SELECT seq FROM checkpoints WHERE fold_version = ? AND seq <= ? ORDER BY seq DESC");
    s.bind(1, static_cast<int64_t>(fold_version)).bind(2, max_seq);
    while (s.step()) seqs.push_back(s.int64(0));
  }
  Stmt s(db_, path_,
         "SELECT c.seq, c.fold_version, c.event_id, c.state, c.checksum, "
         "coalesce(e.id, '') FROM checkpoints c LEFT JOIN events e ON e.seq = c.seq "
         "WHERE c.seq = ?");
  for (int64_t seq : seqs) {
    s.reset();
    s.bind(1, seq);
    if (!s.step()) continue;  // deleted meanwhile by another writer
    Checkpoint c;
    c.seq = s.int64(0);
    c.fold_version = static_cast<int>(s.int64(1));
    c.event_id = s.text(2);
    c.log_event_id = s.text(5);
    c.state = s.text(3);
    c.checksum_ok = checkpoint_checksum(c.seq, s.int64(1), c.event_id, c.state) == s.int64(4);
    if (!f(c)) return;
  }
}

int64_t EventStore::last_checkpoint_seq(int fold_version) const {
  if (!has_table(db_, path_)) return 0;
  Stmt s(db_, path_, "SELECT max(seq) FROM checkpoints WHERE fold_version = ?");
  s.bind(1, static_cast<int64_t>(fold_version));
  s.step();
  return s.is_null(0) ? 0 : s.int64(0);
}

}  // namespace marathon
