// The pure half of ConfinedDir (core/confined_dir.h): what a path relative to a workspace root
// means, with no I/O. A path is a list of components below the root; the root itself is the empty
// list. Link resolution is a walk over those components that asks a Lookup what each one is, so
// the rules (which links may be followed, when a path leaves the root) are tested without a file
// system, and ConfinedDir supplies the Lookup that reads the real one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace marathon {

using PathParts = std::vector<std::string>;

// Splits a path given relative to the root into its components. "." and empty parts are dropped
// and ".." removes the component before it (lexically: "a/../b" is "b", whatever `a` is on disk).
// Refused, with *error saying why (the reason only; the caller names the path): an empty path, a
// NUL byte, an absolute path, and a ".." that
// climbs above the root. "." gives the root (no components).
std::optional<PathParts> normalize_relative(const std::string& path, std::string* error);

// True when `path` is already in the form normalize_relative returns, joined with '/': not empty,
// not absolute, no "", "." or ".." component, no NUL. Paths read from the log must be in this form.
bool is_safe_relative_path(const std::string& path);

// The components joined with '/'; the root (no components) is ".".
std::string join_parts(const PathParts& parts);

enum class EntryKind { kMissing, kFile, kDir, kLink, kFifo, kSocket, kCharDevice, kBlockDevice };

// "no such file", "regular file", "folder", "symbolic link", "FIFO", "socket", "character device",
// "block device".
std::string describe(EntryKind kind);

// What one name inside an already resolved folder is on disk, without following it.
struct Entry {
  EntryKind kind = EntryKind::kMissing;
  std::string link_target;  // kLink: the link's text, as readlink returns it
  uint64_t size = 0;        // kFile: bytes
  std::string error;        // non-empty: the lookup itself failed (I/O), says why
};
using Lookup = std::function<Entry(const PathParts& dir, const std::string& name)>;

enum class Links {
  kFollowInside,  // follow links whose target stays beneath the root; refuse the others
  kNone,          // follow no link: a link is an entry of its own, and one in mid-path is refused
};

struct Resolved {
  PathParts parts;  // the path with every followed link replaced by what it points to
  EntryKind kind = EntryKind::kMissing;  // of the last component (kDir for the root)
  std::string link_target;               // kind == kLink (a final link not followed)
  uint64_t size = 0;                     // kind == kFile
  // kind == kMissing: parts[missing_from..] do not exist (yet); the ones before are folders.
  size_t missing_from = 0;
  std::string error;  // non-empty: refused or failed, says why (names the link or component)
  bool ok() const { return error.empty(); }
};

// Resolves `parts` beneath the root. With Links::kFollowInside a link anywhere (the last component
// included, when follow_last) is replaced by its target, read relative to the folder holding it;
// refused are absolute targets, targets whose ".." climbs above the root, empty targets and more
// than 40 links. With Links::kNone a link before the last component is refused and a last one is
// returned as kLink. A component that is not a folder but has more after it is refused; a missing
// one ends the walk with kind kMissing (what follows it, from the path or a dangling link's
// target, must then be plain names).
Resolved resolve_beneath(const PathParts& parts, Links links, bool follow_last,
                         const Lookup& lookup);

}  // namespace marathon
