#include "core/fork.h"

#include <vector>

#include "core/event_store.h"
#include "core/events.h"
#include "core/run_dir.h"
#include "core/workspace_snapshot.h"

namespace marathon {

namespace fs = std::filesystem;

namespace {

bool looks_like_sha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void collect(const json& j, std::set<std::string>& out) {
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (looks_like_sha256(s)) out.insert(s);
  } else if (j.is_structured()) {
    for (const auto& v : j) collect(v, out);
  }
}

}  // namespace

std::set<std::string> blob_refs(const Event& e) {
  std::set<std::string> out;
  collect(e.payload, out);
  return out;
}

size_t copy_prefix(const EventStore& from, EventStore& to, int64_t at_seq) {
  constexpr size_t kChunk = 1000;
  std::vector<Event> chunk;
  std::set<std::string> copied;
  from.for_each(1, [&](const Event& e) {
    if (e.seq > at_seq) return false;
    for (const std::string& sha : blob_refs(e)) {
      if (copied.count(sha)) continue;
      if (auto bytes = from.get_blob(sha)) {
        to.put_blob(*bytes);
        copied.insert(sha);
      }
    }
    chunk.push_back(e);
    if (chunk.size() == kChunk) {
      to.import_events(chunk);
      chunk.clear();
    }
    return true;
  });
  if (!chunk.empty()) to.import_events(chunk);
  return copied.size();
}

ForkResult fork_run(const fs::path& from_dir, int64_t at_seq, const fs::path& to_dir,
                    const std::optional<events::BudgetSpec>& budget) {
  RunDir src = existing_run_dir(from_dir);
  auto from = EventStore::open(src.events_db().string(), EventStore::Mode::kReadOnly);
  int64_t last = from->last_seq();
  if (at_seq < 1 || at_seq > last) {
    throw StoreError("fork " + from_dir.string() + ": --at " + std::to_string(at_seq) +
                     " is outside the log (seq 1.." + std::to_string(last) + ")");
  }
  bool existed = fs::exists(to_dir);
  RunDir dst = create_run_dir(to_dir);
  try {
    auto to = EventStore::open(dst.events_db().string(), EventStore::Mode::kCreate);
    ForkResult r;
    r.at_seq = at_seq;
    r.blobs = copy_prefix(*from, *to, at_seq);
    r.from_run_id = from->meta("run_id").value_or("");
    r.run_id = new_run_id();
    events::RunForked forked;
    forked.run_id = r.run_id;
    forked.from_run_id = r.from_run_id;
    forked.from_dir = from_dir.string();
    forked.at_seq = at_seq;
    forked.budget = budget;
    to->append(make_event(forked));
    WorkspaceFiles files = workspace_at(*from, at_seq);
    materialize_workspace(*to, files, dst.workspace());
    r.files = files.size();
    return r;
  } catch (...) {
    std::error_code ec;
    if (existed) {
      for (const auto& entry : fs::directory_iterator(to_dir, ec)) fs::remove_all(entry.path(), ec);
    } else {
      fs::remove_all(to_dir, ec);
    }
    throw;
  }
}

}  // namespace marathon
