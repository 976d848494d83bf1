#include "core/workspace_snapshot.h"

#include <vector>

#include "core/confined_dir.h"
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

void materialize_workspace(const EventStore& store, const WorkspaceFiles& files,
                           const fs::path& dir, bool remove_others) {
  auto fail = [&](const std::string& what) {
    throw StoreError("workspace " + dir.string() + ": " + what);
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("cannot create: " + ec.message());
  FsResult<ConfinedDir> ws = ConfinedDir::open(dir);
  if (!ws.ok()) fail(ws.error().reason);
  for (const auto& [path, sha] : files) {
    if (!is_safe_relative_path(path)) fail("refusing unsafe path '" + path + "' from the log");
  }
  if (remove_others) {
    std::vector<std::string> extra;  // collected first: the walk must not see its own removals
    FsResult<size_t> walked = ws->walk(
        ".",
        [&](const FileInfo& e) {
          if (e.kind == EntryKind::kDir && !files.count(e.path)) return true;
          if (!files.count(e.path) || e.kind == EntryKind::kDir) extra.push_back(e.path);
          return false;
        },
        Links::kNone);
    if (!walked.ok()) fail(walked.error().message());
    for (const std::string& p : extra) {
      FsResult<size_t> gone = ws->remove_all(p);
      if (!gone.ok()) fail("cannot remove " + gone.error().message());
    }
  }
  for (const auto& [path, sha] : files) {
    auto bytes = store.get_blob(sha);
    if (!bytes) fail("blob " + sha + " of '" + path + "' is missing from " + store.path());
    FsResult<std::string> w = ws->write(path, *bytes, WriteLinks::kReplace);
    if (!w.ok()) fail("cannot write " + w.error().message());
  }
}

}  // namespace marathon
