#include "core/load_state.h"

#include <stdexcept>

#include "core/checkpoint.h"
#include "core/events.h"

namespace marathon {

State load_state(const EventStore& store, int64_t to_seq, const LoadOptions& options,
                 LoadStats* stats) {
  LoadStats local;
  LoadStats& st = stats ? *stats : local;
  st = LoadStats{};
  State s;
  if (options.use_checkpoints) {
    if (auto c = read_checkpoint(store, to_seq, &st.rejected_checkpoints)) {
      s = std::move(*c);
      st.checkpoint_seq = s.last_seq;
    }
  }
  try {
    store.for_each(s.last_seq + 1, events::fold_skipped_fields(), [&](const Event& e) {
      if (e.seq > to_seq) return false;
      apply(s, e);
      ++st.events_folded;
      if (options.observe) options.observe(e, s);
      return true;
    });
    // The calls still in flight get their arguments from their full tool.started events (those
    // from a checkpoint too: the result never depends on what a writer stored there).
    for (auto& [id, call] : s.in_flight) {
      auto started = store.read(call.started_seq, call.started_seq);
      if (started.size() == 1)
        call.arguments = payload_of<events::ToolStarted>(started[0]).arguments;
    }
  } catch (const std::invalid_argument& e) {
    throw StoreError("event log " + store.path() + ": cannot fold: " + e.what());
  }
  return s;
}

}  // namespace marathon
