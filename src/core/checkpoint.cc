#include "core/checkpoint.h"

#include <spdlog/spdlog.h>

#include "core/fold.h"
#include "core/json_reader.h"
#include "core/state_json.h"

namespace marathon {

void write_checkpoint(EventStore& store, const State& state) {
  // A strict dump: text that is not valid UTF-8 would be replaced and no longer read back equal.
  std::string text = state_to_json(state).dump();
  store.put_checkpoint(state.last_seq, kFoldVersion, text, kCheckpointsKept);
}

bool maybe_write_checkpoint(EventStore& store, const State& state, int64_t every_n_events) {
  if (every_n_events <= 0 || state.last_seq <= 0) return false;
  try {
    int64_t last = store.last_checkpoint_seq(kFoldVersion);
    if (state.last_seq / every_n_events <= last / every_n_events) return false;
    write_checkpoint(store, state);
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("event log {}: no checkpoint at seq {}: {}", store.path(), state.last_seq,
                 e.what());
    return false;
  }
}

std::optional<State> read_checkpoint(const EventStore& store, int64_t max_seq,
                                     std::vector<std::string>* rejected) {
  std::optional<State> found;
  store.for_each_checkpoint(kFoldVersion, max_seq, [&](const EventStore::Checkpoint& c) {
    std::string why;
    if (!c.checksum_ok) {
      why = "checksum mismatch";
    } else if (c.log_event_id != c.event_id) {
      why = c.log_event_id.empty() ? "the log has no event at its seq"
                                   : "the event at its seq is not the one it was taken at";
    } else {
      try {
        State s = state_from_json(parse_json(c.state));
        if (s.last_seq != c.seq) throw std::invalid_argument("it is the state at another seq");
        found = std::move(s);
        return false;
      } catch (const std::exception& e) {
        why = std::string("unreadable: ") + e.what();
      }
    }
    std::string msg = "checkpoint at seq " + std::to_string(c.seq) + " passed over: " + why;
    spdlog::warn("event log {}: {}", store.path(), msg);
    if (rejected) rejected->push_back(std::move(msg));
    return true;
  });
  return found;
}

}  // namespace marathon
