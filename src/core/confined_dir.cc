#include "core/confined_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

namespace marathon {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxWalkDepth = 256;

std::string errno_text(int err) { return std::strerror(err); }

EntryKind kind_of(mode_t mode) {
  if (S_ISREG(mode)) return EntryKind::kFile;
  if (S_ISDIR(mode)) return EntryKind::kDir;
  if (S_ISLNK(mode)) return EntryKind::kLink;
  if (S_ISFIFO(mode)) return EntryKind::kFifo;
  if (S_ISSOCK(mode)) return EntryKind::kSocket;
  if (S_ISCHR(mode)) return EntryKind::kCharDevice;
  return EntryKind::kBlockDevice;
}

// Closes on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

long sys_openat2(int dirfd, const char* path, uint64_t flags, uint64_t mode) {
  open_how how{};
  how.flags = flags;
  how.mode = mode;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

std::optional<std::string> read_link(int dirfd, const std::string& name, int* err) {
  std::vector<char> buf(256);
  while (true) {
    ssize_t n = ::readlinkat(dirfd, name.c_str(), buf.data(), buf.size());
    if (n < 0) {
      *err = errno;
      return std::nullopt;
    }
    if (static_cast<size_t>(n) < buf.size()) return std::string(buf.data(), static_cast<size_t>(n));
    if (buf.size() >= (1u << 16)) {
      *err = ENAMETOOLONG;
      return std::nullopt;
    }
    buf.resize(buf.size() * 4);
  }
}

PathParts parent_of(const PathParts& parts) { return PathParts(parts.begin(), parts.end() - 1); }

std::string temp_name() {
  static std::atomic<uint64_t> counter{0};
  return ".marathon-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

bool write_all(int fd, std::string_view bytes, int* err) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// Unlinks everything below the open folder `dirfd` (no link followed), then nothing else.
bool clear_folder(int dirfd, int depth, size_t* removed, std::string* reason) {
  if (depth > kMaxWalkDepth) {
    *reason = "folders nest deeper than " + std::to_string(kMaxWalkDepth);
    return false;
  }
  int dup = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup < 0) {
    *reason = "cannot open folder: " + errno_text(errno);
    return false;
  }
  DIR* d = ::fdopendir(dup);
  if (!d) {
    ::close(dup);
    *reason = "cannot read folder: " + errno_text(errno);
    return false;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  for (const std::string& n : names) {
    struct stat st;
    if (::fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      *reason = "cannot stat '" + n + "': " + errno_text(errno);
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      Fd sub(::openat(dirfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub.fd < 0) {
        *reason = "cannot open folder '" + n + "': " + errno_text(errno);
        return false;
      }
      if (!clear_folder(sub.fd, depth + 1, removed, reason)) return false;
      if (::unlinkat(dirfd, n.c_str(), AT_REMOVEDIR) != 0) {
        *reason = "cannot remove folder '" + n + "': " + errno_text(errno);
        return false;
      }
    } else if (::unlinkat(dirfd, n.c_str(), 0) != 0 && errno != ENOENT) {
      *reason = "cannot remove '" + n + "': " + errno_text(errno);
      return false;
    }
    ++*removed;
  }
  return true;
}

}  // namespace

bool ConfinedDir::kernel_has_openat2() {
  static std::once_flag once;
  static bool has = false;
  std::call_once(once, [] {
    Fd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (root.fd < 0) return;
    long fd = sys_openat2(root.fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
    // ENOSYS: an older kernel; EPERM: a seccomp filter that does not know it; EINVAL/E2BIG: a
    // kernel without these RESOLVE_ flags. The component walk serves all of them.
    if (fd >= 0) {
      ::close(static_cast<int>(fd));
      has = true;
    }
  });
  return has;
}

FsResult<ConfinedDir> ConfinedDir::open(const fs::path& root, Resolver resolver) {
  int fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return FsError{root.string(), "cannot open the workspace folder: " + errno_text(errno)};
  }
  bool use2 =
      resolver == Resolver::kOpenat2 || (resolver == Resolver::kAuto && kernel_has_openat2());
  if (resolver == Resolver::kOpenat2 && !kernel_has_openat2()) {
    ::close(fd);
    return FsError{root.string(), "openat2 with RESOLVE_BENEATH is not available on this kernel"};
  }
  return ConfinedDir(fd, root, use2);
}

ConfinedDir::ConfinedDir(int fd, fs::path root, bool openat2)
    : fd_(fd), root_(std::move(root)), openat2_(openat2) {}

ConfinedDir::ConfinedDir(ConfinedDir&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), root_(std::move(o.root_)), openat2_(o.openat2_) {}

ConfinedDir& ConfinedDir::operator=(ConfinedDir&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    root_ = std::move(o.root_);
    openat2_ = o.openat2_;
  }
  return *this;
}

ConfinedDir::~ConfinedDir() {
  if (fd_ >= 0) ::close(fd_);
}

int ConfinedDir::open_parts(const PathParts& parts, int flags, mode_t mode) const {
  flags |= O_CLOEXEC | O_NOFOLLOW;
  if (openat2_) {
    std::string p = join_parts(parts);
    long fd;
    do {
      fd = sys_openat2(fd_, p.c_str(), static_cast<uint64_t>(flags), (flags & O_CREAT) ? mode : 0);
    } while (fd < 0 && errno == EAGAIN);  // a concurrent rename: the kernel asks for a retry
    return static_cast<int>(fd);
  }
  if (parts.empty()) return ::openat(fd_, ".", flags, mode);
  Fd dir(::openat(fd_, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0) return -1;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = ::openat(dir.fd, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return -1;
    ::close(dir.fd);
    dir.fd = next;
  }
  return ::openat(dir.fd, parts.back().c_str(), flags, mode);
}

Entry ConfinedDir::lookup(const PathParts& dir, const std::string& name) const {
  Entry e;
  Fd owned;
  int dfd = fd_;
  if (!dir.empty()) {
    owned.fd = open_parts(dir, O_PATH | O_DIRECTORY);
    if (owned.fd < 0) {
      e.error = "cannot open folder '" + join_parts(dir) + "': " + errno_text(errno);
      return e;
    }
    dfd = owned.fd;
  }
  struct stat st;
  if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return e;  // kMissing
    PathParts here = dir;
    here.push_back(name);
    e.error = "cannot stat '" + join_parts(here) + "': " + errno_text(errno);
    return e;
  }
  e.kind = kind_of(st.st_mode);
  e.size = static_cast<uint64_t>(st.st_size);
  if (e.kind == EntryKind::kLink) {
    int err = 0;
    auto target = read_link(dfd, name, &err);
    if (!target) {
      e.error = "cannot read link '" + name + "': " + errno_text(err);
      return e;
    }
    e.link_target = *target;
  }
  return e;
}

std::optional<Resolved> ConfinedDir::resolve(const std::string& path, Links links, bool follow_last,
                                             FsError* error) const {
  std::string why;
  std::optional<PathParts> parts = normalize_relative(path, &why);
  if (!parts) {
    *error = FsError{path, why};
    return std::nullopt;
  }
  Resolved r = resolve_beneath(
      *parts, links, follow_last,
      [this](const PathParts& dir, const std::string& name) { return lookup(dir, name); });
  if (!r.ok()) {
    *error = FsError{path, r.error};
    return std::nullopt;
  }
  return r;
}

FsResult<FileInfo> ConfinedDir::stat(const std::string& path, Links links) const {
  FsError err;
  auto r = resolve(path, links, /*follow_last=*/true, &err);
  if (!r) return err;
  return FileInfo{join_parts(r->parts), r->kind, r->size, r->link_target};
}

FsResult<std::string> ConfinedDir::read(const std::string& path, size_t max_bytes,
                                        Links links) const {
  FsError err;
  auto r = resolve(path, links, /*follow_last=*/true, &err);
  if (!r) return err;
  switch (r->kind) {
    case EntryKind::kFile:
      break;
    case EntryKind::kMissing:
      return FsError{path, "no such file"};
    case EntryKind::kDir:
      return FsError{path, "is a folder"};
    case EntryKind::kLink:
      return FsError{path, "is a symbolic link (-> " + r->link_target + "), not followed here"};
    default:
      return FsError{
          path, "is a " + describe(r->kind) + ", not a regular file: refused without opening it"};
  }
  if (r->size > max_bytes) {
    return FsError{path, "file is " + std::to_string(r->size) + " bytes, more than the limit of " +
                             std::to_string(max_bytes)};
  }
  Fd fd(open_parts(r->parts, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  if (fd.fd < 0) return FsError{path, "cannot open: " + errno_text(errno)};
  struct stat st;
  if (::fstat(fd.fd, &st) != 0) return FsError{path, "cannot stat: " + errno_text(errno)};
  if (!S_ISREG(st.st_mode)) {
    return FsError{path, "is a " + describe(kind_of(st.st_mode)) + ", not a regular file"};
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FsError{path, "read failed: " + errno_text(errno)};
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return FsError{path, "file grew past the limit of " + std::to_string(max_bytes) + " bytes"};
    }
  }
  return out;
}

int ConfinedDir::open_dir_creating(const PathParts& parts, WriteLinks links,
                                   std::string* reason) const {
  Fd dir(::openat(fd_, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0) {
    *reason = "cannot open the workspace folder: " + errno_text(errno);
    return -1;
  }
  PathParts done;
  for (const std::string& name : parts) {
    done.push_back(name);
    const int flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int next = ::openat(dir.fd, name.c_str(), flags);
    if (next < 0 && (errno == ENOTDIR || errno == ELOOP) && links == WriteLinks::kReplace) {
      struct stat st;
      if (::fstatat(dir.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode) &&
          !S_ISDIR(st.st_mode)) {
        // A link, FIFO, socket or device where the log has a folder: the entry goes, not what a
        // link points to.
        if (::unlinkat(dir.fd, name.c_str(), 0) != 0 && errno != ENOENT) {
          *reason = "cannot remove the " + describe(kind_of(st.st_mode)) + " '" + join_parts(done) +
                    "' in the way: " + errno_text(errno);
          return -1;
        }
        next = ::openat(dir.fd, name.c_str(), flags);
      } else {
        errno = ENOTDIR;
      }
    }
    if (next < 0 && errno == ENOENT) {
      if (::mkdirat(dir.fd, name.c_str(), 0755) != 0 && errno != EEXIST) {
        *reason = "cannot create folder '" + join_parts(done) + "': " + errno_text(errno);
        return -1;
      }
      next = ::openat(dir.fd, name.c_str(), flags);
    }
    if (next < 0) {
      *reason = (errno == ENOTDIR || errno == ELOOP)
                    ? "'" + join_parts(done) + "' is not a folder"
                    : "cannot open folder '" + join_parts(done) + "': " + errno_text(errno);
      return -1;
    }
    ::close(dir.fd);
    dir.fd = next;
  }
  return dir.release();
}

FsResult<std::string> ConfinedDir::write(const std::string& path, std::string_view bytes,
                                         WriteLinks links) const {
  PathParts parts;
  if (links == WriteLinks::kFollowInside) {
    FsError err;
    auto r = resolve(path, Links::kFollowInside, /*follow_last=*/true, &err);
    if (!r) return err;
    if (r->kind == EntryKind::kDir) return FsError{path, "is a folder"};
    parts = std::move(r->parts);
  } else {
    std::string why;
    auto p = normalize_relative(path, &why);
    if (!p) return FsError{path, why};
    parts = std::move(*p);
  }
  if (parts.empty()) return FsError{path, "is the workspace folder itself"};
  std::string reason;
  Fd dir(open_dir_creating(parent_of(parts), links, &reason));
  if (dir.fd < 0) return FsError{path, reason};
  const std::string& name = parts.back();

  mode_t mode = 0644;
  bool keep_mode = false;
  struct stat st;
  if (::fstatat(dir.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) return FsError{path, "is a folder"};
    if (S_ISREG(st.st_mode)) {
      mode = st.st_mode & 0777;
      keep_mode = true;
    }
  }
  std::string tmp = temp_name();
  Fd out(::openat(dir.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (out.fd < 0) return FsError{path, "cannot create a temporary file: " + errno_text(errno)};
  int err = 0;
  bool ok = write_all(out.fd, bytes, &err);
  if (ok && keep_mode && ::fchmod(out.fd, mode) != 0) {
    ok = false;
    err = errno;
  }
  if (::close(out.release()) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::renameat(dir.fd, tmp.c_str(), dir.fd, name.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlinkat(dir.fd, tmp.c_str(), 0);
    return FsError{
        path, (err == EISDIR ? std::string("is a folder") : "write failed: " + errno_text(err))};
  }
  return join_parts(parts);
}

FsResult<std::string> ConfinedDir::mkdirs(const std::string& path, WriteLinks links) const {
  PathParts parts;
  if (links == WriteLinks::kFollowInside) {
    FsError err;
    auto r = resolve(path, Links::kFollowInside, /*follow_last=*/true, &err);
    if (!r) return err;
    if (r->kind != EntryKind::kDir && r->kind != EntryKind::kMissing) {
      return FsError{path, "is a " + describe(r->kind) + ", not a folder"};
    }
    parts = std::move(r->parts);
  } else {
    std::string why;
    auto p = normalize_relative(path, &why);
    if (!p) return FsError{path, why};
    parts = std::move(*p);
  }
  std::string reason;
  Fd dir(open_dir_creating(parts, links, &reason));
  if (dir.fd < 0) return FsError{path, reason};
  return join_parts(parts);
}

FsResult<bool> ConfinedDir::remove(const std::string& path) const {
  std::string why;
  auto parts = normalize_relative(path, &why);
  if (!parts) return FsError{path, why};
  if (parts->empty()) return FsError{path, "is the workspace folder itself"};
  Fd dir(parts->size() == 1 ? ::openat(fd_, ".", O_PATH | O_DIRECTORY | O_CLOEXEC)
                            : open_parts(parent_of(*parts), O_PATH | O_DIRECTORY));
  if (dir.fd < 0) {
    // A missing folder, or a link or file where a folder would be: no such entry beneath the root.
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV) return false;
    return FsError{path, "cannot open its folder: " + errno_text(errno)};
  }
  if (::unlinkat(dir.fd, parts->back().c_str(), 0) != 0) {
    if (errno == ENOENT) return false;
    if (errno == EISDIR || errno == EPERM) {
      struct stat st;
      if (::fstatat(dir.fd, parts->back().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISDIR(st.st_mode)) {
        return FsError{path, "is a folder"};
      }
    }
    return FsError{path, "cannot remove: " + errno_text(errno)};
  }
  return true;
}

FsResult<size_t> ConfinedDir::remove_all(const std::string& path) const {
  std::string why;
  auto parts = normalize_relative(path, &why);
  if (!parts) return FsError{path, why};
  if (parts->empty()) return FsError{path, "is the workspace folder itself"};
  Fd dir(parts->size() == 1 ? ::openat(fd_, ".", O_PATH | O_DIRECTORY | O_CLOEXEC)
                            : open_parts(parent_of(*parts), O_PATH | O_DIRECTORY));
  if (dir.fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV) return size_t{0};
    return FsError{path, "cannot open its folder: " + errno_text(errno)};
  }
  const char* name = parts->back().c_str();
  struct stat st;
  if (::fstatat(dir.fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return size_t{0};
    return FsError{path, "cannot stat: " + errno_text(errno)};
  }
  size_t removed = 0;
  if (S_ISDIR(st.st_mode)) {
    Fd sub(::openat(dir.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.fd < 0) return FsError{path, "cannot open folder: " + errno_text(errno)};
    std::string reason;
    if (!clear_folder(sub.fd, 1, &removed, &reason)) return FsError{path, reason};
    if (::unlinkat(dir.fd, name, AT_REMOVEDIR) != 0) {
      return FsError{path, "cannot remove folder: " + errno_text(errno)};
    }
  } else if (::unlinkat(dir.fd, name, 0) != 0 && errno != ENOENT) {
    return FsError{path, "cannot remove: " + errno_text(errno)};
  }
  return removed + 1;
}

namespace {

struct Walker {
  const std::function<bool(const FileInfo&)>& visit;
  size_t visited = 0;
  std::string error;

  bool folder(int dfd, const std::string& rel, int depth) {
    if (depth > kMaxWalkDepth) {
      error = "folders nest deeper than " + std::to_string(kMaxWalkDepth) + " at '" + rel + "'";
      return false;
    }
    int dup = ::openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* d = dup < 0 ? nullptr : ::fdopendir(dup);
    if (!d) {
      if (dup >= 0) ::close(dup);
      error = "cannot read folder '" + rel + "': " + errno_text(errno);
      return false;
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      struct stat st;
      if (::fstatat(dfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;  // gone since the listing
        error = "cannot stat '" + (rel == "." ? n : rel + "/" + n) + "': " + errno_text(errno);
        return false;
      }
      FileInfo info;
      info.path = rel == "." ? n : rel + "/" + n;
      info.kind = kind_of(st.st_mode);
      info.size = static_cast<uint64_t>(st.st_size);
      if (info.kind == EntryKind::kLink) {
        int err = 0;
        info.link_target = read_link(dfd, n, &err).value_or("");
      }
      ++visited;
      bool descend = visit(info);
      if (info.kind != EntryKind::kDir || !descend) continue;
      Fd sub(::openat(dfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub.fd < 0) {
        if (errno == ENOENT) continue;
        error = "cannot open folder '" + info.path + "': " + errno_text(errno);
        return false;
      }
      if (!folder(sub.fd, info.path, depth + 1)) return false;
    }
    return true;
  }
};

}  // namespace

FsResult<size_t> ConfinedDir::walk(const std::string& dir,
                                   const std::function<bool(const FileInfo&)>& visit,
                                   Links links) const {
  FsError err;
  auto r = resolve(dir, links, /*follow_last=*/true, &err);
  if (!r) return err;
  if (r->kind == EntryKind::kMissing) return FsError{dir, "no such folder"};
  if (r->kind != EntryKind::kDir)
    return FsError{dir, "is a " + describe(r->kind) + ", not a folder"};
  Fd fd(open_parts(r->parts, O_RDONLY | O_DIRECTORY));
  if (fd.fd < 0) return FsError{dir, "cannot open folder: " + errno_text(errno)};
  Walker w{visit};
  if (!w.folder(fd.fd, join_parts(r->parts), 1)) return FsError{dir, w.error};
  return w.visited;
}

}  // namespace marathon
