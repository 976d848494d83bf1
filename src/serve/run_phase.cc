#include "serve/run_phase.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/run_dir.h"

namespace marathon::serve {

const char* to_string(RunPhase p) {
  switch (p) {
    case RunPhase::kRunning:
      return "running";
    case RunPhase::kPaused:
      return "paused";
    case RunPhase::kFinished:
      return "finished";
    case RunPhase::kCrashed:
      return "crashed";
  }
  return "?";
}

bool runner_holds_lock(const std::filesystem::path& run_dir) {
  struct stat st {};
  if (::stat((run_dir / kLockFileName).c_str(), &st) != 0) return false;
  // Lines of /proc/locks: "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1837289 0 EOF" (the file as
  // major:minor:inode; the device numbers of an overlay differ from stat's, so the inode decides).
  std::ifstream locks("/proc/locks");
  const std::string inode = ":" + std::to_string(static_cast<unsigned long long>(st.st_ino));
  for (std::string line; std::getline(locks, line);) {
    if (line.find("FLOCK") == std::string::npos || line.find("->") != std::string::npos) continue;
    std::istringstream in(line);
    std::string field;
    for (int i = 0; i < 6 && in >> field; ++i) {
      if (i == 5 && field.size() > inode.size() &&
          field.compare(field.size() - inode.size(), inode.size(), inode) == 0) {
        return true;
      }
    }
  }
  return false;
}

RunPhase phase_of(const State& s, bool lock_held) {
  if (s.done) return RunPhase::kFinished;
  if (s.paused) return RunPhase::kPaused;
  return lock_held ? RunPhase::kRunning : RunPhase::kCrashed;
}

}  // namespace marathon::serve
