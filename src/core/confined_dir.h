// ConfinedDir: every read, write, removal and listing the runtime itself does in a workspace the
// model shares. The model can plant symbolic links, FIFOs and sockets there (through `run`); the
// runtime has more privileges than the model's sandbox, so none of its operations may follow a
// link out of the root or block on a special file.
//
// Guarantees, for every operation:
// - Paths are relative to the root; absolute paths and ".." climbing above it are refused
//   (core/confined_path.h holds the rules, without I/O).
// - No link is ever followed by the kernel on the runtime's behalf. Links are read (readlinkat)
//   and interpreted by resolve_beneath: with Links::kFollowInside one whose target stays beneath
//   the root is followed, any other (absolute, climbing out, more than 40) is refused; with
//   Links::kNone a link is an entry of its own. The path that results holds no link, and it is
//   opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) where the
//   kernel has it (probed once), else one component at a time with openat(O_NOFOLLOW) from the
//   root's descriptor. A link swapped in after the resolution makes the open fail, not escape.
// - read() opens regular files only: a FIFO, socket or device is refused from its lstat, before
//   any open, and the open itself is O_NONBLOCK and re-checked with fstat. Nothing here blocks.
// - write() is atomic: a temporary file in the same folder, then renameat over the name, so the
//   rename replaces a link (or FIFO) at the last component instead of writing through it, and a
//   hard link to the old file keeps the old bytes. A regular file's permission bits are kept.
//   Files are not fsynced: the event log holds every byte and resume rewrites the workspace.
// - remove() unlinks the entry itself: for a link the link, never its target.
// - walk() lists without following links; links are reported with their target text.
// Errors are values (FsError: the path as given and the reason), never exceptions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/confined_path.h"

namespace marathon {

struct FsError {
  std::string path;    // as the caller gave it
  std::string reason;  // e.g. "no such file", "refused: link 'x' points to ..."
  std::string message() const { return path + ": " + reason; }
};

template <class T>
class FsResult {
 public:
  FsResult(T value) : value_(std::move(value)) {}        // NOLINT: implicit by design
  FsResult(FsError error) : error_(std::move(error)) {}  // NOLINT
  bool ok() const { return value_.has_value(); }
  const T& value() const { return *value_; }
  T& value() { return *value_; }
  const T& operator*() const { return *value_; }
  T& operator*() { return *value_; }
  const T* operator->() const { return &*value_; }
  const FsError& error() const { return error_; }

 private:
  std::optional<T> value_;
  FsError error_;
};

// One entry as stat() and walk() report it. `path` is resolved (links followed by stat with
// kFollowInside replaced by their targets) and relative to the root.
struct FileInfo {
  std::string path;
  EntryKind kind = EntryKind::kMissing;
  uint64_t size = 0;        // kFile
  std::string link_target;  // kLink
};

// How paths are opened beneath the root: kAuto takes openat2 when the kernel has it.
enum class Resolver { kAuto, kOpenat2, kWalk };

// Writes and folder creation take one more mode than Links: kReplace follows no link and removes
// what stands where a folder or the file must be when it is a link, FIFO, socket or device (the
// entry itself; a link's target is never touched). A regular file in mid-path is still refused.
// This is how the log's files are put back (resume, fork, revert): the log, not the disk, decides.
enum class WriteLinks { kFollowInside, kReplace };

class ConfinedDir {
 public:
  // Opens `root`, which must be an existing folder (the runtime's own path: followed as given).
  static FsResult<ConfinedDir> open(const std::filesystem::path& root,
                                    Resolver resolver = Resolver::kAuto);
  // Whether this kernel has openat2 with RESOLVE_BENEATH (probed once per process).
  static bool kernel_has_openat2();

  ConfinedDir(ConfinedDir&& other) noexcept;
  ConfinedDir& operator=(ConfinedDir&& other) noexcept;
  ConfinedDir(const ConfinedDir&) = delete;
  ConfinedDir& operator=(const ConfinedDir&) = delete;
  ~ConfinedDir();

  const std::filesystem::path& root() const { return root_; }
  bool uses_openat2() const { return openat2_; }

  // What `path` is (kMissing is a value, not an error), its resolved path and size.
  FsResult<FileInfo> stat(const std::string& path, Links links = Links::kFollowInside) const;

  // The bytes of a regular file; refused above max_bytes. With Links::kNone a final link is
  // refused ("is a symbolic link") rather than followed.
  FsResult<std::string> read(const std::string& path, size_t max_bytes,
                             Links links = Links::kFollowInside) const;

  // Creates or atomically replaces the file, creating missing folders. Returns the resolved path
  // written, relative to the root (what workspace.written records). A folder at the path is
  // refused.
  FsResult<std::string> write(const std::string& path, std::string_view bytes,
                              WriteLinks links = WriteLinks::kFollowInside) const;

  // Creates the folder and its missing parents; returns its resolved path.
  FsResult<std::string> mkdirs(const std::string& path,
                               WriteLinks links = WriteLinks::kFollowInside) const;

  // Removes the entry at `path` without following any link (a folder is refused: remove_all).
  // Returns false when there was nothing to remove (also when a component before the last is not
  // a real folder: then no file of that path exists beneath the root).
  FsResult<bool> remove(const std::string& path) const;

  // Removes the entry and, for a folder, everything below it; no link followed. Returns the
  // number of entries removed (0 when absent).
  FsResult<size_t> remove_all(const std::string& path) const;

  // Visits every entry below the folder `dir` (resolved with `links`), depth first, names sorted,
  // never following a link. `visit` returns whether to descend into a folder it was given.
  // Fails on a folder it cannot read or when folders nest deeper than 256.
  FsResult<size_t> walk(const std::string& dir, const std::function<bool(const FileInfo&)>& visit,
                        Links links = Links::kFollowInside) const;

 private:
  ConfinedDir(int fd, std::filesystem::path root, bool openat2);
  // Opens `parts` with `flags` following no link, beneath the root; -1 with errno on failure.
  int open_parts(const PathParts& parts, int flags, mode_t mode = 0) const;
  Entry lookup(const PathParts& dir, const std::string& name) const;
  // normalize_relative then resolve_beneath; on failure the FsError names `path`.
  std::optional<Resolved> resolve(const std::string& path, Links links, bool follow_last,
                                  FsError* error) const;
  // Opens (creating as needed) the folder `parts`; kReplace clears links and special files in the
  // way. Returns an O_PATH descriptor, or -1 with *reason set.
  int open_dir_creating(const PathParts& parts, WriteLinks links, std::string* reason) const;

  int fd_ = -1;  // O_PATH | O_DIRECTORY on the root
  std::filesystem::path root_;
  bool openat2_ = false;
};

}  // namespace marathon
