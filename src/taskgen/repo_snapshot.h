// The committed files of a repository, copied out for a task (`marathon init`): `git archive` of
// HEAD, so uncommitted changes, untracked and ignored files never enter a task. git and tar run
// as host tools (sandbox/launcher.h, Profile::kHostTool), built by host_git.h: nothing the
// repository configures (fsmonitor, hooks, filter drivers, pager, ...) runs, since a repository
// may come whole from someone else.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace marathon::taskgen {

// A repository that cannot be used; what() says what and where.
class InitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RepoSnapshot {
  std::filesystem::path repo;        // the folder asked for (absolute)
  std::string commit;                // HEAD
  std::vector<std::string> files;    // regular files, relative, sorted
  std::vector<std::string> skipped;  // committed entries that are not regular files (links)
  uint64_t bytes = 0;                // of the files
};

inline constexpr size_t kMaxSnapshotFiles = 5000;
inline constexpr uint64_t kMaxSnapshotBytes = 100ull << 20;

// Copies the files committed at HEAD under `repo` (the whole repository, or the subtree when
// `repo` is a folder inside one, its paths then relative to it) into `dest`, which must not
// exist. Throws InitError for a missing folder, a folder outside any git repository, a
// repository without a commit, nothing committed under the folder, or a snapshot above the caps.
RepoSnapshot snapshot_repo(const std::filesystem::path& repo, const std::filesystem::path& dest);

// The `git status --porcelain` lines for `repo` (changed, deleted, untracked files under it): what
// a snapshot leaves out. Empty when there are none or git cannot tell.
std::vector<std::string> uncommitted_changes(const std::filesystem::path& repo);

}  // namespace marathon::taskgen
