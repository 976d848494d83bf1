// The one-writer lock of a run directory: <run>/lock, held with flock(2) for the whole life of the
// process that drives the run (`run`, `resume`, `replay`, and `fork` on its new run), so that two
// runners never append to one log, rewrite one workspace or pay for one evaluation twice. The
// kernel drops the lock when its holder exits, however it exits, so a lock left by a dead process
// is simply taken over. Readers (`status`, `log`) and the goal verbs never take it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/event_store.h"
#include "core/run_dir.h"

namespace marathon {

// Who holds a run's lock, as its lock file says (written after locking).
struct LockHolder {
  int64_t pid = 0;
  std::string host;
};

// This machine's host name, as a lock file and run.resumed name it ("unknown" when it has none).
std::string this_host();

// Pure: the lock file's text ("pid N\nhost H\n") and back; nullopt when the text is not that form
// (e.g. a holder that has locked but not yet written).
std::string format_lock_holder(const LockHolder& h);
std::optional<LockHolder> parse_lock_holder(std::string_view text);

// A second process asked for a run directory that another one holds.
class RunLockedError : public StoreError {
 public:
  RunLockedError(const std::filesystem::path& dir, std::optional<LockHolder> holder);
  const std::optional<LockHolder>& holder() const { return holder_; }

 private:
  std::optional<LockHolder> holder_;
};

class RunLock {
 public:
  // Locks an existing run directory (resume). Throws RunLockedError naming the holder's pid and
  // host when another process holds it, StoreError when the lock file cannot be made.
  static RunLock acquire(const std::filesystem::path& dir);

  // Locks the directory of a new run (run, replay, fork): `dir` must be absent or empty except for
  // a lock file; it is created when absent. A directory with other entries is refused without
  // writing anything to it (RunLockedError when it is a run another process holds).
  static RunLock acquire_new(const std::filesystem::path& dir);

  RunLock(RunLock&& o) noexcept;
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  ~RunLock();  // releases the lock (the file stays: a stale lock file is harmless)

  // Throws StoreError when <dir>/lock is no longer the file this process locked (removed or
  // replaced: another process could then lock the new one).
  void verify() const;

  // For a new run whose creation failed: removes the lock file, and the directory too when
  // acquire_new made it and nothing else is in it.
  void abandon_new();

  const std::filesystem::path& path() const { return path_; }

 private:
  RunLock(int fd, std::filesystem::path dir, bool created_dir);
  int fd_ = -1;
  std::filesystem::path dir_;
  std::filesystem::path path_;
  bool created_dir_ = false;
};

}  // namespace marathon
