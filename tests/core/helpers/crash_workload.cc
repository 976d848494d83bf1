#include "helpers/crash_workload.h"

#include <random>
#include <stdexcept>

#include "core/events.h"

namespace crashtest {

using marathon::Event;
using marathon::json;
using marathon::NewEvent;
namespace events = marathon::events;

namespace {

std::mt19937_64 rng_for(uint64_t seed, int64_t seq) {
  std::seed_seq s{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                  static_cast<uint32_t>(seq), static_cast<uint32_t>(seq >> 32)};
  return std::mt19937_64(s);
}

std::string text(std::mt19937_64& r, size_t n) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz    0123456789{}();=+*\n";
  std::string s(n, ' ');
  for (char& c : s) c = kChars[r() % (sizeof kChars - 1)];
  return s;
}

NewEvent make(const std::string& type, json payload, uint64_t seed, int64_t seq) {
  NewEvent e;
  e.type = type;
  e.payload = std::move(payload);
  e.id = "e-" + std::to_string(seed) + "-" + std::to_string(seq);
  return e;
}

}  // namespace

Unit unit_at(uint64_t seed, int64_t start_seq) {
  if (start_seq == 1) return {UnitKind::kSingle, 1};
  auto r = rng_for(seed ^ 0x5eedULL, start_seq);
  switch (r() % 4) {
    case 0:
      return {UnitKind::kSingle, 1};
    case 1:
      return {UnitKind::kBlobWrite, 1};
    case 2:
      return {UnitKind::kToolPair, 2};
    default:
      return {UnitKind::kBatch, static_cast<int>(2 + r() % 5)};
  }
}

std::vector<NewEvent> unit_events(uint64_t seed, int64_t s, std::string* blob) {
  Unit u = unit_at(seed, s);
  auto r = rng_for(seed, s);
  std::vector<NewEvent> out;
  if (s == 1) {
    out.push_back(
        make(events::RunCreated::kType,
             {{"run_id", "run-crash-" + std::to_string(seed)},
              {"task", {{"name", "crash"}}},
              {"goal", {{"objective", "survive"}, {"metric", "score"}, {"direction", "max"}}},
              {"budget", {{"max_tool_calls", 1000000}}},
              {"config", {{"policy", "scripted"}}}},
             seed, s));
    return out;
  }
  std::string call = "call-" + std::to_string(s);
  switch (u.kind) {
    case UnitKind::kSingle:
      out.push_back(
          make(events::ModelResponse::kType,
               {{"message", {{"content", text(r, 50 + r() % 3000)}}},
                {"usage", {{"prompt_tokens", r() % 5000}, {"completion_tokens", r() % 500}}},
                {"cost_usd", double(r() % 1000) / 1e5}},
               seed, s));
      break;
    case UnitKind::kBlobWrite: {
      *blob = text(r, 100 + r() % 20000);
      std::string sha = marathon::sha256_hex(*blob);
      out.push_back(make(events::WorkspaceWritten::kType,
                         {{"path", "kernel_" + std::to_string(r() % 4) + ".cc"},
                          {"sha", sha},
                          {"size", blob->size()}},
                         seed, s));
      break;
    }
    case UnitKind::kToolPair:
      out.push_back(make(
          events::ToolStarted::kType,
          {{"call_id", call}, {"name", "run"}, {"arguments", {{"cmd", text(r, 40)}}}}, seed, s));
      out.push_back(make(events::ToolFinished::kType,
                         {{"call_id", call},
                          {"name", "run"},
                          {"ok", true},
                          {"output", text(r, 10 + r() % 2000)},
                          {"elapsed_s", 0.5}},
                         seed, s + 1));
      break;
    case UnitKind::kBatch:
      for (int i = 0; i < u.events; ++i) {
        int64_t seq = s + i;
        if (i % 3 == 0 && i + 1 == u.events) {  // no start without its finish in a batch
          out.push_back(make(events::LedgerNoted::kType,
                             {{"kind", "finding"}, {"text", text(r, 80)}}, seed, seq));
        } else if (i % 3 == 0) {
          out.push_back(make(
              events::ToolStarted::kType,
              {{"call_id", call}, {"name", "evaluate"}, {"arguments", json::object()}}, seed, seq));
        } else if (i % 3 == 1) {
          out.push_back(make(events::ToolFinished::kType,
                             {{"call_id", call},
                              {"name", "evaluate"},
                              {"ok", true},
                              {"output", text(r, 200)},
                              {"elapsed_s", 2.0}},
                             seed, seq));
        } else {
          out.push_back(make(events::EvalFinished::kType,
                             {{"candidate", "cand-" + std::to_string(seq)},
                              {"cache_key", "key-" + std::to_string(seq)},
                              {"cached", false},
                              {"status", "ok"},
                              {"result",
                               {{"correct", true},
                                {"score", double(r() % 1000) / 10},
                                {"violations", json::array()}}},
                              {"elapsed_s", 2.0},
                              {"gpu_s", 1.5},
                              {"strategy", text(r, 60)}},
                             seed, seq));
          call = "call-" + std::to_string(seq);
        }
      }
      break;
  }
  return out;
}

bool may_end_at(uint64_t seed, int64_t last_seq) {
  int64_t s = 1;
  while (s <= last_seq) {
    Unit u = unit_at(seed, s);
    int64_t end = s + u.events - 1;
    if (last_seq < end) return u.kind != UnitKind::kBatch;
    s = end + 1;
  }
  return true;
}

uint64_t digest(const Event& e) {
  std::string h = marathon::sha256_hex(to_json(e).dump());
  return std::stoull(h.substr(0, 16), nullptr, 16);
}

void run_writer(marathon::EventStore& store, uint64_t seed,
                const std::function<void(int64_t, uint64_t)>& ack) {
  int64_t next = store.last_seq() + 1;
  int64_t s = 1;  // start of the unit that holds `next`
  while (s + unit_at(seed, s).events <= next) s += unit_at(seed, s).events;
  for (;;) {
    Unit u = unit_at(seed, s);
    std::string blob;
    std::vector<NewEvent> events = unit_events(seed, s, &blob);
    if (next > s && u.kind != UnitKind::kToolPair) {
      throw std::runtime_error("log ends inside an atomic unit at seq " + std::to_string(next - 1));
    }
    switch (u.kind) {
      case UnitKind::kSingle:
        ack(s, digest(store.append(events[0])));
        break;
      case UnitKind::kBlobWrite:
        store.put_blob(blob);
        ack(s, digest(store.append(events[0])));
        break;
      case UnitKind::kToolPair:  // resumes with the finish when a crash fell between the two
        if (next == s) ack(s, digest(store.append(events[0])));
        ack(s + 1, digest(store.append(events[1])));
        break;
      case UnitKind::kBatch:
        for (const Event& e : store.append_batch(events)) ack(e.seq, digest(e));
        break;
    }
    s += u.events;
    next = s;
  }
}

}  // namespace crashtest
