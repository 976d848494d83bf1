// The tables of events.db (docs/event-log.md spells out every column). Internal to core.
#pragma once

namespace marathon::detail {

inline constexpr const char* kCreateTables =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE events(seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, stream TEXT NOT NULL, "
    "recorded_at INTEGER NOT NULL, type TEXT NOT NULL, type_version INTEGER NOT NULL, durability "
    "TEXT NOT NULL, causation TEXT NOT NULL, payload TEXT NOT NULL, checksum INTEGER NOT NULL);"
    "CREATE TABLE blobs(sha256 TEXT PRIMARY KEY, bytes BLOB NOT NULL);";

// Optional: logs written before it existed get it at their first checkpoint.
inline constexpr const char* kCreateCheckpointsTable =
    "CREATE TABLE IF NOT EXISTS checkpoints(seq INTEGER PRIMARY KEY, fold_version INTEGER NOT "
    "NULL, event_id TEXT NOT NULL, state TEXT NOT NULL, checksum INTEGER NOT NULL);";

}  // namespace marathon::detail
