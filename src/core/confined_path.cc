#include "core/confined_path.h"

#include <deque>

namespace marathon {

namespace {

constexpr int kMaxLinkHops = 40;  // the kernel's own limit (MAXSYMLINKS)

// Splits on '/', dropping empty and "." parts; ".." is kept for the caller to apply.
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (!part.empty() && part != ".") out.push_back(std::move(part));
    start = end + 1;
  }
  return out;
}

}  // namespace

std::optional<PathParts> normalize_relative(const std::string& path, std::string* error) {
  if (path.empty()) {
    *error = "empty path";
    return std::nullopt;
  }
  if (path.find('\0') != std::string::npos) {
    *error = "path contains a NUL byte";
    return std::nullopt;
  }
  if (path.front() == '/') {
    *error = "refused: an absolute path; give a path relative to the workspace";
    return std::nullopt;
  }
  PathParts out;
  for (std::string& part : split_path(path)) {
    if (part != "..") {
      out.push_back(std::move(part));
    } else if (out.empty()) {
      *error = "refused: '..' climbs out of the workspace";
      return std::nullopt;
    } else {
      out.pop_back();
    }
  }
  return out;
}

bool is_safe_relative_path(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

std::string join_parts(const PathParts& parts) {
  if (parts.empty()) return ".";
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += '/';
    out += p;
  }
  return out;
}

std::string describe(EntryKind kind) {
  switch (kind) {
    case EntryKind::kMissing:
      return "no such file";
    case EntryKind::kFile:
      return "regular file";
    case EntryKind::kDir:
      return "folder";
    case EntryKind::kLink:
      return "symbolic link";
    case EntryKind::kFifo:
      return "FIFO";
    case EntryKind::kSocket:
      return "socket";
    case EntryKind::kCharDevice:
      return "character device";
    case EntryKind::kBlockDevice:
      return "block device";
  }
  return "unknown file type";
}

Resolved resolve_beneath(const PathParts& parts, Links links, bool follow_last,
                         const Lookup& lookup) {
  Resolved r;
  auto fail = [&](const std::string& why) {
    r.error = "refused: " + why;
    return r;
  };
  std::deque<std::string> pending;
  for (const std::string& p : parts) {
    if (!p.empty() && p != ".") pending.push_back(p);
  }
  PathParts done;   // resolved folders so far: no links among them
  std::string via;  // the last link followed, for errors
  int hops = 0;
  while (!pending.empty()) {
    std::string name = std::move(pending.front());
    pending.pop_front();
    if (name == "..") {
      if (done.empty()) {
        return fail(via.empty() ? "'..' climbs out of the workspace"
                                : "link '" + via + "' leads outside the workspace");
      }
      done.pop_back();
      continue;
    }
    Entry e = lookup(done, name);
    PathParts here = done;
    here.push_back(name);
    if (!e.error.empty()) {
      r.error = e.error;
      return r;
    }
    bool last = pending.empty();
    switch (e.kind) {
      case EntryKind::kLink: {
        bool follow = links == Links::kFollowInside && (!last || follow_last);
        if (!follow) {
          if (!last) {
            return fail("'" + join_parts(here) +
                        "' is a symbolic link and links are not followed here");
          }
          r.parts = std::move(here);
          r.kind = EntryKind::kLink;
          r.link_target = e.link_target;
          return r;
        }
        if (++hops > kMaxLinkHops) return fail("more than 40 symbolic links in a row");
        via = join_parts(here);
        if (e.link_target.empty()) return fail("link '" + via + "' is empty");
        if (e.link_target.front() == '/') {
          return fail("link '" + via + "' points to the absolute path '" + e.link_target +
                      "', outside the workspace");
        }
        std::vector<std::string> target = split_path(e.link_target);
        pending.insert(pending.begin(), target.begin(), target.end());
        continue;  // `done` stays the folder that holds the link
      }
      case EntryKind::kMissing:
        for (const std::string& p : pending) {
          if (p == "..") return fail("'" + join_parts(here) + "' does not exist");
        }
        r.missing_from = done.size();
        r.parts = std::move(here);
        r.parts.insert(r.parts.end(), pending.begin(), pending.end());
        r.kind = EntryKind::kMissing;
        return r;
      case EntryKind::kDir:
        done = std::move(here);
        continue;
      default:
        if (!last) {
          return fail("'" + join_parts(here) + "' is a " + describe(e.kind) + ", not a folder");
        }
        r.parts = std::move(here);
        r.kind = e.kind;
        r.size = e.size;
        return r;
    }
  }
  r.parts = std::move(done);
  r.kind = EntryKind::kDir;
  return r;
}

}  // namespace marathon
