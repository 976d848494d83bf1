#include "core/workspace_snapshot.h"

#include <unistd.h>

#include <fstream>
#include <vector>

#include "core/event_store.h"
#include "core/events.h"

namespace marathon {

namespace fs = std::filesystem;

void apply_workspace_event(WorkspaceFiles& files, const Event& e) {
  if (!is<events::WorkspaceWritten>(e)) return;
  auto p = payload_of<events::WorkspaceWritten>(e);
  if (p.deleted) {
    files.erase(p.path);
  } else {
    files[p.path] = p.sha;
  }
}

WorkspaceFiles workspace_at(const EventStore& store, int64_t at_seq) {
  WorkspaceFiles files;
  store.for_each(1, [&](const Event& e) {
    if (e.seq > at_seq) return false;
    apply_workspace_event(files, e);
    return true;
  });
  return files;
}

std::string candidate_hash(const WorkspaceFiles& files) {
  std::string buf;
  for (const auto& [path, sha] : files) {
    buf += path;
    buf += '\0';
    buf += sha;
    buf += '\0';
  }
  return sha256_hex(buf);
}

bool is_safe_relative_path(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return path.find('\0') == std::string::npos;
}

void materialize_workspace(const EventStore& store, const WorkspaceFiles& files,
                           const fs::path& dir, bool remove_others) {
  auto fail = [&](const std::string& what) {
    throw StoreError("workspace " + dir.string() + ": " + what);
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("cannot create: " + ec.message());
  for (const auto& [path, sha] : files) {
    if (!is_safe_relative_path(path)) fail("refusing unsafe path '" + path + "' from the log");
    auto bytes = store.get_blob(sha);
    if (!bytes) fail("blob " + sha + " of '" + path + "' is missing from " + store.path());
    fs::path target = dir / path;
    fs::create_directories(target.parent_path(), ec);
    if (ec) fail("cannot create directory for '" + path + "': " + ec.message());
    fs::path tmp = target;
    tmp += ".marathon-tmp-" + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
      if (!out.flush()) fail("cannot write '" + path + "'");
    }
    fs::rename(tmp, target, ec);
    if (ec) fail("cannot move '" + path + "' into place: " + ec.message());
  }
  if (!remove_others) return;
  std::vector<fs::path> extra;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file()) continue;
    std::string rel = fs::relative(it->path(), dir).generic_string();
    if (!files.count(rel)) extra.push_back(it->path());
  }
  for (const fs::path& p : extra) fs::remove(p, ec);
}

}  // namespace marathon
