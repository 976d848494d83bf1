// EventStore: appends, reads and blobs on one run's SQLite log (open/create: event_store_open.cc).
// Each row carries a checksum over its envelope and payload text, so a damaged page that SQLite's
// own checks miss is still reported as corruption instead of being folded.
#include "core/event_store.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sqlite3.h>

#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "core/sqlite_stmt.h"

namespace marathon {
namespace {

using detail::Stmt;

constexpr const char* kSelectEvent =
    "SELECT seq, id, stream, recorded_at, type, type_version, durability, causation, payload, "
    "checksum FROM events";

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// First 8 bytes of sha256 over the length-prefixed envelope fields and the payload text.
int64_t event_checksum(const Event& e, std::string_view payload_text) {
  // One context per thread, reused: creating one per event costs more than hashing a small row.
  static thread_local std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> holder(
      EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_MD_CTX* ctx = holder.get();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  auto add = [&](std::string_view s) {
    uint64_t n = s.size();
    EVP_DigestUpdate(ctx, &n, sizeof n);
    EVP_DigestUpdate(ctx, s.data(), s.size());
  };
  auto add_int = [&](int64_t v) { EVP_DigestUpdate(ctx, &v, sizeof v); };
  add_int(e.seq);
  add(e.id);
  add(e.stream);
  add_int(e.recorded_at_us);
  add(e.type);
  add_int(e.type_version);
  add(to_string(e.durability));
  add(e.causation);
  add(payload_text);
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, d, &len);
  int64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | d[i];
  return v;
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

// A row as read from SQLite, before its checksum is verified and its payload parsed.
struct RawRow {
  Event e;  // envelope fields; payload not yet set
  int64_t checksum = 0;
  std::string durability;
  std::string payload;  // the stored text (what the checksum covers)
  std::string parse;    // the projected text to parse, when `projected`
  bool projected = false;
};

RawRow read_row(const Stmt& s, int parse_col) {
  RawRow r;
  r.e.seq = s.int64(0);
  r.e.id = s.text(1);
  r.e.stream = s.text(2);
  r.e.recorded_at_us = s.int64(3);
  r.e.type = s.text(4);
  r.e.type_version = static_cast<int>(s.int64(5));
  r.durability = s.text(6);
  r.e.causation = s.text(7);
  r.payload = s.text(8);
  r.checksum = s.int64(9);
  if (parse_col >= 0 && !s.is_null(parse_col)) {
    r.parse = s.text(parse_col);
    r.projected = true;
  }
  return r;
}

// Verifies the row's checksum and parses its payload.
Event finish_row(RawRow&& r, const std::string& path) {
  Event e = std::move(r.e);
  try {
    e.durability = durability_from_string(r.durability);
  } catch (const std::invalid_argument&) {
    throw StoreError("event log " + path + ": corrupted event at seq " + std::to_string(e.seq) +
                     " (bad durability)");
  }
  if (event_checksum(e, r.payload) != r.checksum) {
    throw StoreError("event log " + path + ": corrupted event at seq " + std::to_string(e.seq) +
                     " (checksum mismatch)");
  }
  try {
    e.payload = json::parse(r.projected ? r.parse : r.payload);
  } catch (const json::exception& ex) {
    throw StoreError("event log " + path + ": event at seq " + std::to_string(e.seq) +
                     " has an unreadable payload: " + ex.what());
  }
  return e;
}

Event row_to_event(const Stmt& s, const std::string& path, int parse_col = -1) {
  return finish_row(read_row(s, parse_col), path);
}

// Streams rows from `s` on a second thread (SQLite reading) while the calling thread verifies,
// parses and hands them to `f`: the two halves of a fold cost about the same.
void pipelined_rows(Stmt& s, int parse_col, const std::string& path,
                    const std::function<bool(RawRow&&)>& f) {
  constexpr size_t kChunk = 256, kMaxChunks = 16;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<RawRow>> chunks;
  bool done = false, stop = false;
  std::exception_ptr error;
  std::thread reader([&] {
    std::vector<RawRow> chunk;
    auto push = [&] {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return chunks.size() < kMaxChunks || stop; });
      chunks.push_back(std::move(chunk));
      chunk.clear();
      cv.notify_all();
    };
    try {
      while (s.step()) {
        chunk.push_back(read_row(s, parse_col));
        if (chunk.size() == kChunk) {
          push();
          std::lock_guard lock(mu);
          if (stop) break;
        }
      }
      if (!chunk.empty()) push();
    } catch (...) {
      std::lock_guard lock(mu);
      error = std::current_exception();
    }
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  });
  auto finish = [&] {
    {
      std::lock_guard lock(mu);
      stop = true;
      cv.notify_all();
    }
    reader.join();
  };
  try {
    for (;;) {
      std::vector<RawRow> chunk;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !chunks.empty() || done; });
        if (chunks.empty()) break;
        chunk = std::move(chunks.front());
        chunks.pop_front();
        cv.notify_all();
      }
      for (RawRow& r : chunk) {
        if (!f(std::move(r))) {
          finish();
          return;
        }
      }
    }
  } catch (...) {
    finish();
    throw;
  }
  finish();
  if (error) std::rethrow_exception(error);
  (void)path;
}

// BEGIN IMMEDIATE ... COMMIT; rolls back unless committed.
class WriteTx {
 public:
  WriteTx(sqlite3* db, const std::string& path) : db_(db), path_(path) {
    detail::exec(db, path, "BEGIN IMMEDIATE");
  }
  ~WriteTx() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    detail::exec(db_, path_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

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
  if ((e.type == ev::kRunCreated || e.type == ev::kRunForked) && e.payload.is_object() &&
      e.payload.contains("run_id") && e.payload["run_id"].is_string()) {
    Stmt m(db_, path_, "INSERT OR REPLACE INTO meta(key, value) VALUES ('run_id', ?)");
    m.bind(1, e.payload["run_id"].get<std::string>()).step();
  }
}

Event EventStore::append(const NewEvent& e) { return append_batch({e}).at(0); }

std::vector<Event> EventStore::append_batch(const std::vector<NewEvent>& events) {
  if (read_only_) throw StoreError("event log " + path_ + ": opened read-only, cannot append");
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
  return out;
}

void EventStore::import_events(const std::vector<Event>& events) {
  if (read_only_) throw StoreError("event log " + path_ + ": opened read-only, cannot import");
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
}

std::vector<Event> EventStore::read(int64_t from_seq, int64_t to_seq) const {
  std::vector<Event> out;
  for_each(from_seq, [&](const Event& e) {
    if (e.seq > to_seq) return false;
    out.push_back(e);
    return true;
  });
  return out;
}

void EventStore::for_each(int64_t from_seq, const std::function<bool(const Event&)>& f) const {
  for_each(from_seq, Projection{}, f);
}

namespace {
// `CASE type WHEN 'a' THEN json_remove(payload, '$.x', ...) ... END`: the projected payload column.
std::string projection_sql(const EventStore::Projection& leave_out, const std::string& path) {
  auto literal = [&](const std::string& s) {
    for (char c : s) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '$')) {
        throw StoreError("event log " + path + ": bad projection name '" + s + "'");
      }
    }
    return "'" + s + "'";
  };
  std::string sql = "CASE type";
  for (const auto& [type, paths] : leave_out) {
    sql += " WHEN " + literal(type) + " THEN json_remove(payload";
    for (const auto& p : paths) sql += ", " + literal(p);
    sql += ")";
  }
  return sql + " END";
}
}  // namespace

void EventStore::for_each(int64_t from_seq, const Projection& leave_out,
                          const std::function<bool(const Event&)>& f) const {
  if (from_seq < 1) from_seq = 1;
  std::string sql = kSelectEvent;
  int parse_col = -1;
  if (!leave_out.empty()) {
    sql.replace(sql.find(" FROM events"), 12,
                ", " + projection_sql(leave_out, path_) + " FROM events");
    parse_col = 10;
  }
  Stmt s(db_, path_, sql + " WHERE seq >= ? ORDER BY seq");
  s.bind(1, from_seq);
  int64_t expect = from_seq;
  auto deliver = [&](Event&& e) {
    if (e.seq != expect) {
      throw StoreError("event log " + path_ + ": corrupted log: seq " + std::to_string(expect) +
                       " is missing (next is " + std::to_string(e.seq) + ")");
    }
    ++expect;
    return f(e);
  };
  if (!leave_out.empty()) {  // a fold: read on a second thread (f must not use this store)
    pipelined_rows(s, parse_col, path_,
                   [&](RawRow&& r) { return deliver(finish_row(std::move(r), path_)); });
    return;
  }
  while (s.step()) {
    if (!deliver(row_to_event(s, path_, parse_col))) return;
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
  std::string sha = sha256_hex(bytes);
  Stmt s(db_, path_, "INSERT OR IGNORE INTO blobs(sha256, bytes) VALUES (?, ?)");
  s.bind(1, sha).bind_blob(2, bytes).step();
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
