#include "core/load_state.h"

#include <stdexcept>

namespace marathon {

namespace {
// Bulky payload fields fold() never reads (docs/event-log.md): left to SQLite to skip.
const EventStore::Projection kFoldProjection = {
    {ev::kModelResponse, {"$.message"}},
    {ev::kToolFinished, {"$.output"}},
    {ev::kToolStarted, {"$.arguments"}},
};
}  // namespace

State load_state(const EventStore& store, int64_t to_seq) {
  State s;
  try {
    store.for_each(1, kFoldProjection, [&](const Event& e) {
      if (e.seq > to_seq) return false;
      apply(s, e);
      return true;
    });
    // The calls still in flight get their arguments from their full tool.started events.
    for (auto& [id, call] : s.in_flight) {
      auto started = store.read(call.started_seq, call.started_seq);
      if (started.size() == 1) call.arguments = started[0].payload.value("arguments", json());
    }
  } catch (const std::invalid_argument& e) {
    throw StoreError("event log " + store.path() + ": cannot fold: " + e.what());
  }
  return s;
}

}  // namespace marathon
