// A run directory: <run>/events.db (the log), <run>/workspace/ (the files the agent edits,
// rebuildable at any seq from the log's workspace.written blobs) and <run>/lock (held by the one
// process that drives the run: core/run_lock.h).
#pragma once

#include <filesystem>
#include <string>

namespace marathon {

inline constexpr const char* kEventsDbName = "events.db";
inline constexpr const char* kWorkspaceDirName = "workspace";
inline constexpr const char* kLockFileName = "lock";

struct RunDir {
  std::filesystem::path root;
  std::filesystem::path events_db() const { return root / kEventsDbName; }
  std::filesystem::path workspace() const { return root / kWorkspaceDirName; }
  std::filesystem::path lock_file() const { return root / kLockFileName; }
};

// An existing run directory. Throws StoreError saying what is missing (no such directory, not a
// directory, no events.db in it).
RunDir existing_run_dir(const std::filesystem::path& dir);

// Makes the directory of a new run (and its workspace/). Throws StoreError if `dir` exists and is
// not an empty directory (a lock file alone, taken by the creator, counts as empty), or cannot be
// made. The log itself is created by
// EventStore::open(kCreate).
RunDir create_run_dir(const std::filesystem::path& dir);

// A fresh run id: "run-" followed by 16 random hex digits.
std::string new_run_id();

}  // namespace marathon
