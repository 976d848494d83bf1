// Not a fuzzer: prepares a seed for fuzz_eventlog_file from a real run's log (make-eventlog-seed.sh
// runs it). Adds fold checkpoints at the given seqs, so that the fuzzer starts from logs whose
// checkpoints verify and mutates them from there.
//   eventlog_seed EVENTS_DB SEQ...
#include <cstdio>
#include <string>

#include "core/checkpoint.h"
#include "core/load_state.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: eventlog_seed EVENTS_DB SEQ...\n");
    return 2;
  }
  try {
    auto store = marathon::EventStore::open(argv[1], marathon::EventStore::Mode::kOpen);
    for (int i = 2; i < argc; ++i) {
      marathon::State s =
          marathon::load_state(*store, std::stoll(argv[i]), {.use_checkpoints = false});
      marathon::write_checkpoint(*store, s);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "eventlog_seed: %s\n", e.what());
    return 1;
  }
  return 0;
}
