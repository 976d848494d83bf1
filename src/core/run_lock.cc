#include "core/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace marathon {

namespace fs = std::filesystem;

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// The holder as the lock file says, read through `fd` (nullopt when unreadable or not yet written).
std::optional<LockHolder> read_holder(int fd) {
  std::string text(4096, '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  if (n <= 0) return std::nullopt;
  text.resize(static_cast<size_t>(n));
  return parse_lock_holder(text);
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// True when `dir` holds an entry other than the lock file.
bool has_other_entries(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename() != kLockFileName) return true;
  }
  return false;
}

}  // namespace

std::string format_lock_holder(const LockHolder& h) {
  return "pid " + std::to_string(h.pid) + "\nhost " + h.host + "\n";
}

std::optional<LockHolder> parse_lock_holder(std::string_view text) {
  LockHolder h;
  bool have_pid = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.substr(0, 4) == "pid ") {
      std::string_view digits = line.substr(4);
      if (digits.empty() || digits.size() > 18) return std::nullopt;
      int64_t pid = 0;
      for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        pid = pid * 10 + (c - '0');
      }
      h.pid = pid;
      have_pid = pid > 0;
    } else if (line.substr(0, 5) == "host ") {
      h.host = std::string(line.substr(5));
    }
  }
  if (!have_pid) return std::nullopt;
  return h;
}

namespace {
std::string holder_text(const std::optional<LockHolder>& h) {
  if (!h) return "a process that has not yet written its pid";
  return "pid " + std::to_string(h->pid) + " on host " + (h->host.empty() ? "?" : h->host);
}
}  // namespace

RunLockedError::RunLockedError(const fs::path& dir, std::optional<LockHolder> holder)
    : StoreError("run directory " + dir.string() + " is in use by another marathon process (" +
                 holder_text(holder) +
                 "); one process at a time may run a directory: wait for it to end or stop it "
                 "(status, log and goal work meanwhile)"),
      holder_(std::move(holder)) {}

RunLock::RunLock(int fd, fs::path dir, bool created_dir)
    : fd_(fd), dir_(std::move(dir)), path_(dir_ / kLockFileName), created_dir_(created_dir) {}

RunLock::RunLock(RunLock&& o) noexcept
    : fd_(o.fd_), dir_(std::move(o.dir_)), path_(std::move(o.path_)), created_dir_(o.created_dir_) {
  o.fd_ = -1;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor of the open file drops the flock
}

RunLock RunLock::acquire(const fs::path& dir) {
  const fs::path path = dir / kLockFileName;
  auto fail = [&](const std::string& what, int err) {
    return StoreError("run directory " + dir.string() + ": " + what + " " + path.string() + ": " +
                      errno_text(err));
  };
  // A holder that abandons a new run unlinks the file it locked; locking such an unlinked file
  // would exclude nobody, so the lock is only taken on the file that is at `path` afterwards.
  for (int attempt = 0; attempt < 8; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) throw fail("cannot open the lock file", errno);
    struct stat fst {};
    if (::fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
      ::close(fd);
      throw StoreError("run directory " + dir.string() + ": " + path.string() +
                       " is not a regular file");
    }
    int rc;
    do {
      rc = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      int err = errno;
      if (err == EWOULDBLOCK) {
        std::optional<LockHolder> holder = read_holder(fd);
        ::close(fd);
        throw RunLockedError(dir, holder);
      }
      ::close(fd);
      throw fail("cannot lock", err);
    }
    struct stat pst {};
    if (::lstat(path.c_str(), &pst) != 0 || !same_file(fst, pst)) {
      ::close(fd);
      continue;
    }
    std::string text = format_lock_holder({static_cast<int64_t>(::getpid()), this_host()});
    if (::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()) ||
        ::ftruncate(fd, static_cast<off_t>(text.size())) != 0) {
      int err = errno;
      ::close(fd);
      throw fail("cannot write the lock file", err);
    }
    return RunLock(fd, dir, false);
  }
  throw StoreError("run directory " + dir.string() + ": its lock file " + path.string() +
                   " keeps being replaced; cannot lock it");
}

RunLock RunLock::acquire_new(const fs::path& dir) {
  std::error_code ec;
  auto not_empty = [&] {
    return StoreError("run directory " + dir.string() + ": already exists and is not empty");
  };
  bool created = false;
  if (fs::exists(fs::symlink_status(dir, ec))) {
    if (!fs::is_directory(dir, ec)) {
      throw StoreError("run directory " + dir.string() + ": exists and is not a directory");
    }
    if (has_other_entries(dir)) {
      // A run: say who runs it when someone does. Anything else is left untouched.
      if (fs::exists(dir / kEventsDbName, ec)) {
        RunLock probe = acquire(dir);
      }
      throw not_empty();
    }
  } else {
    created = fs::create_directories(dir, ec);
    if (ec) {
      throw StoreError("run directory " + dir.string() + ": cannot create: " + ec.message());
    }
  }
  RunLock lock = acquire(dir);
  lock.created_dir_ = created;
  // Another process may have filled the directory between the check above and the lock.
  if (has_other_entries(dir)) throw not_empty();
  return lock;
}

void RunLock::verify() const {
  struct stat fst {
  }, pst{};
  if (fd_ < 0 || ::fstat(fd_, &fst) != 0) {
    throw StoreError("run directory " + dir_.string() + ": its lock is not held");
  }
  if (::lstat(path_.c_str(), &pst) != 0 || !same_file(fst, pst)) {
    throw StoreError("run directory " + dir_.string() + ": its lock file " + path_.string() +
                     " was removed or replaced while this process held it, so another process "
                     "could run the directory too; stopping");
  }
}

void RunLock::abandon_new() {
  if (fd_ < 0) return;
  struct stat fst {
  }, pst{};
  if (::fstat(fd_, &fst) == 0 && ::lstat(path_.c_str(), &pst) == 0 && same_file(fst, pst)) {
    ::unlink(path_.c_str());
  }
  if (created_dir_) ::rmdir(dir_.c_str());  // only succeeds when nothing else is in it
  ::close(fd_);
  fd_ = -1;
}

}  // namespace marathon
