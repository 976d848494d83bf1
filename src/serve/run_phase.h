// The phase of a run as the Runs page and `marathon runs` show it: finished and paused come from
// the log (fold); an open run is running while a process holds its lock (core/run_lock.h), and
// crashed when none does (killed, or its machine went down: `marathon resume` carries on).
#pragma once

#include <filesystem>

#include "core/state.h"

namespace marathon::serve {

enum class RunPhase { kRunning, kPaused, kFinished, kCrashed };

const char* to_string(RunPhase p);

// Whether a process on this machine holds the run's lock, read from /proc/locks (the lock is never
// taken or tested here: a runner starting at that moment must not find it taken). A lock held on
// another host of a shared file system is not seen.
bool runner_holds_lock(const std::filesystem::path& run_dir);

RunPhase phase_of(const State& s, bool lock_held);

}  // namespace marathon::serve
