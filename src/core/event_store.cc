// EventStore: appends, reads and blobs on one run's SQLite log (open/create: event_store_open.cc).
// Each row carries a checksum over its envelope and payload text, so a damaged page that SQLite's
// own checks miss is still reported as corruption instead of being folded.
#include "core/event_store.h"

#include <openssl/rand.h>
#include <sqlite3.h>

#include <chrono>
#include <memory>

#include "core/checksum.h"
#include "core/events.h"
#include "core/json_reader.h"
#include "core/sqlite_stmt.h"

namespace marathon {
namespace {

using detail::Stmt;
using detail::WriteTx;

constexpr const char* kSelectEvent =
    "SELECT seq, id, stream, recorded_at, type, type_version, durability, causation, payload, "
    "checksum FROM events";

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The row checksum (core/checksum.h) over the envelope fields and the payload text, in order.
int64_t row_checksum(int64_t seq, std::string_view id, std::string_view stream, int64_t recorded_at,
                     std::string_view type, int64_t type_version, std::string_view durability,
                     std::string_view causation, std::string_view payload_text) {
  return detail::Checksum64()
      .add(seq)
      .add(id)
      .add(stream)
      .add(recorded_at)
      .add(type)
      .add(type_version)
      .add(durability)
      .add(causation)
      .add(payload_text)
      .value();
}

int64_t event_checksum(const Event& e, std::string_view payload_text) {
  return row_checksum(e.seq, e.id, e.stream, e.recorded_at_us, e.type, e.type_version,
                      to_string(e.durability), e.causation, payload_text);
}

std::string dump_payload(const json& payload) {
  // Invalid UTF-8 (e.g. from a tool's output) is replaced rather than refused.
  return payload.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string new_event_id() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw StoreError("cannot generate an event id: RAND_bytes");
  static const char* kHex = "0123456789abcdef";
  std::string id = "ev-";
  for (unsigned char c : b) {
    id += kHex[c >> 4];
    id += kHex[c & 0xf];
  }
  return id;
}

// Reads the current row of `s` (columns as in kSelectEvent) into `e`, reusing its strings'
// capacity, after verifying the row's checksum on SQLite's own buffers. The payload is parsed
// without the top-level members in `leave_out`; the checksum covers the full text.
void read_row(const Stmt& s, const std::string& path,
              const std::vector<std::string_view>& leave_out, Event& e) {
  int64_t seq = s.int64(0);
  std::string_view id = s.text(1), stream = s.text(2), type = s.text(4), durability = s.text(6),
                   causation = s.text(7), payload = s.text(8);
  int64_t recorded_at = s.int64(3), type_version = s.int64(5);
  auto corrupted = [&](const char* why) {
    return StoreError("event log " + path + ": corrupted event at seq " + std::to_string(seq) +
                      " (" + why + ")");
  };
  if (row_checksum(seq, id, stream, recorded_at, type, type_version, durability, causation,
                   payload) != s.int64(9)) {
    throw corrupted("checksum mismatch");
  }
  try {
    e.durability = durability_from_string(std::string(durability));
  } catch (const std::invalid_argument&) {
    throw corrupted("bad durability");
  }
  e.seq = seq;
  e.id.assign(id);
  e.stream.assign(stream);
  e.recorded_at_us = recorded_at;
  e.type.assign(type);
  e.type_version = static_cast<int>(type_version);
  e.causation.assign(causation);
  try {
    e.payload = parse_json(payload, leave_out);
  } catch (const json::exception& ex) {
    throw StoreError("event log " + path + ": event at seq " + std::to_string(seq) +
                     " has an unreadable payload: " + ex.what());
  }
}

Event row_to_event(const Stmt& s, const std::string& path) {
  Event e;
  read_row(s, path, {}, e);
  return e;
}

}  // namespace

namespace {
constexpr const char* kInsertEvent =
    "INSERT INTO events(seq, id, stream, recorded_at, type, type_version, durability, causation, "
    "payload, checksum) VALUES (?,?,?,?,?,?,?,?,?,?)";
}  // namespace

void EventStore::insert_locked(Event& e, void* insert_stmt) {
  std::string payload = dump_payload(e.payload);
  if (payload.find("\xEF\xBF\xBD") != std::string::npos) e.payload = json::parse(payload);
  Stmt& ins = *static_cast<Stmt*>(insert_stmt);
  ins.reset();
  ins.bind(1, e.seq)
      .bind(2, e.id)
      .bind(3, e.stream)
      .bind(4, e.recorded_at_us)
      .bind(5, e.type)
      .bind(6, static_cast<int64_t>(e.type_version))
      .bind(7, to_string(e.durability))
      .bind(8, e.causation)
      .bind(9, payload)
      .bind(10, event_checksum(e, payload));
  ins.step();
  // meta.run_id mirrors the run's identity (run.created, or run.forked for a fork).
  if (std::optional<std::string> run_id = events::run_id_of(e)) {
    Stmt m(db_, path_, "INSERT OR REPLACE INTO meta(key, value) VALUES ('run_id', ?)");
    m.bind(1, *run_id).step();
  }
}

Event EventStore::append(const NewEvent& e) { return append_batch({e}).at(0); }

std::vector<Event> EventStore::append_batch(const std::vector<NewEvent>& events) {
  if (read_only_) throw StoreError("event log " + path_ + ": opened read-only, cannot append");
  check_files();
  std::vector<Event> out;
  out.reserve(events.size());
  WriteTx tx(db_, path_);
  Stmt ins(db_, path_, kInsertEvent);
  int64_t last = 0, last_at = 0;
  {
    Stmt s(db_, path_, "SELECT seq, recorded_at FROM events ORDER BY seq DESC LIMIT 1");
    if (s.step()) {
      last = s.int64(0);
      last_at = s.int64(1);
    }
  }
  for (const NewEvent& n : events) {
    if (n.type.empty())
      throw StoreError("event log " + path_ + ": cannot append an event with no type");
    if (!n.payload.is_object()) {
      throw StoreError("event log " + path_ + ": payload of " + n.type + " is not a JSON object");
    }
    if (!n.id.empty()) {  // the id is the idempotency anchor: appending it again is a no-op
      if (auto old = find_by_id(n.id)) {
        if (old->type != n.type || dump_payload(old->payload) != dump_payload(n.payload)) {
          throw StoreError("event log " + path_ + ": event id " + n.id +
                           " is already used by seq " + std::to_string(old->seq) +
                           " with different content");
        }
        out.push_back(*old);
        continue;
      }
    }
    Event e;
    e.seq = ++last;
    e.id = n.id.empty() ? new_event_id() : n.id;
    e.stream = n.stream;
    e.recorded_at_us = last_at = std::max(now_us(), last_at);
    e.type = n.type;
    e.type_version = n.type_version;
    e.durability = n.durability;
    e.causation = n.causation;
    e.payload = n.payload;
    insert_locked(e, &ins);
    out.push_back(std::move(e));
  }
  tx.commit();
  check_files();
  return out;
}

void EventStore::import_events(const std::vector<Event>& events) {
  if (read_only_) throw StoreError("event log " + path_ + ": opened read-only, cannot import");
  check_files();
  WriteTx tx(db_, path_);
  Stmt ins(db_, path_, kInsertEvent);
  int64_t last = last_seq();
  for (Event e : events) {
    if (e.seq != last + 1) {
      throw StoreError("event log " + path_ + ": cannot import seq " + std::to_string(e.seq) +
                       " after seq " + std::to_string(last));
    }
    insert_locked(e, &ins);
    last = e.seq;
  }
  tx.commit();
  check_files();
}

std::vector<Event> EventStore::read(int64_t from_seq, int64_t to_seq) const {
  std::vector<Event> out;
  scan(from_seq, to_seq, Projection{}, [&](Event& e) {
    out.push_back(std::move(e));
    return true;
  });
  return out;
}

void EventStore::for_each(int64_t from_seq, const std::function<bool(const Event&)>& f) const {
  scan(from_seq, INT64_MAX, Projection{}, f);
}

void EventStore::for_each(int64_t from_seq, const Projection& leave_out,
                          const std::function<bool(const Event&)>& f) const {
  scan(from_seq, INT64_MAX, leave_out, f);
}

void EventStore::scan(int64_t from_seq, int64_t to_seq, const Projection& leave_out,
                      const std::function<bool(Event&)>& f) const {
  if (from_seq < 1) from_seq = 1;
  // The top-level member names to leave out, by event type.
  std::vector<std::pair<std::string_view, std::vector<std::string_view>>> skip;
  for (const auto& [type, paths] : leave_out) {
    auto& keys = skip.emplace_back(type, std::vector<std::string_view>()).second;
    for (const std::string& p : paths) {
      std::string_view key(p);
      if (key.substr(0, 2) != "$." || key.size() < 3 ||
          key.find_first_of(".[", 2) != std::string_view::npos) {
        throw StoreError("event log " + path_ + ": bad projection path '" + p +
                         "' (only top-level members, \"$.name\")");
      }
      keys.push_back(key.substr(2));
    }
  }
  static const std::vector<std::string_view> kNone;
  Stmt s(db_, path_, std::string(kSelectEvent) + " WHERE seq >= ? AND seq <= ? ORDER BY seq");
  s.bind(1, from_seq).bind(2, to_seq);
  int64_t expect = from_seq;
  Event e;  // reused: its strings keep their capacity from row to row
  while (s.step()) {
    int64_t seq = s.int64(0);
    if (seq != expect) {
      throw StoreError("event log " + path_ + ": corrupted log: seq " + std::to_string(expect) +
                       " is missing (next is " + std::to_string(seq) + ")");
    }
    ++expect;
    std::string_view type = s.text(4);
    const std::vector<std::string_view>* keys = &kNone;
    for (const auto& [t, k] : skip) {
      if (t == type) keys = &k;
    }
    read_row(s, path_, *keys, e);
    if (!f(e)) return;
  }
}

int64_t EventStore::last_seq() const {
  Stmt s(db_, path_, "SELECT max(seq) FROM events");
  s.step();
  return s.is_null(0) ? 0 : s.int64(0);
}

std::optional<Event> EventStore::find_by_id(const std::string& id) const {
  Stmt s(db_, path_, std::string(kSelectEvent) + " WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return row_to_event(s, path_);
}

std::string EventStore::put_blob(const std::string& bytes) {
  if (read_only_)
    throw StoreError("event log " + path_ + ": opened read-only, cannot store a blob");
  check_files();
  std::string sha = sha256_hex(bytes);
  {
    Stmt s(db_, path_, "INSERT OR IGNORE INTO blobs(sha256, bytes) VALUES (?, ?)");
    s.bind(1, sha).bind_blob(2, bytes).step();
  }
  check_files();
  return sha;
}

std::optional<std::string> EventStore::get_blob(const std::string& sha256) const {
  Stmt s(db_, path_, "SELECT bytes FROM blobs WHERE sha256 = ?");
  s.bind(1, sha256);
  if (!s.step()) return std::nullopt;
  std::string bytes(s.blob(0));
  if (sha256_hex(bytes) != sha256) {
    throw StoreError("event log " + path_ + ": corrupted blob " + sha256 +
                     " (its bytes hash to something else)");
  }
  return bytes;
}

bool EventStore::has_blob(const std::string& sha256) const {
  Stmt s(db_, path_, "SELECT 1 FROM blobs WHERE sha256 = ?");
  s.bind(1, sha256);
  return s.step();
}

std::optional<std::string> EventStore::meta(const std::string& key) const {
  Stmt s(db_, path_, "SELECT value FROM meta WHERE key = ?");
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  return std::string(s.text(0));
}

}  // namespace marathon
