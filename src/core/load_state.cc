#include "core/load_state.h"

#include <stdexcept>

namespace marathon {

State load_state(const EventStore& store, int64_t to_seq) {
  State s;
  try {
    store.for_each(1, [&](const Event& e) {
      if (e.seq > to_seq) return false;
      apply(s, e);
      return true;
    });
  } catch (const std::invalid_argument& e) {
    throw StoreError("event log " + store.path() + ": cannot fold: " + e.what());
  }
  return s;
}

}  // namespace marathon
