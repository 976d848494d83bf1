// Child of the SIGKILL crash tests: opens (or creates) the log at argv[1] and appends the
// deterministic workload of seed argv[2] until killed, writing a 16-byte acknowledgement
// (seq, digest) to stdout after each append returns.
// With argv[3] = N > 0 it also keeps the folded state (starting, like a resumed runner, from the
// log's checkpoint) and calls maybe_write_checkpoint(store, state, N) after each append, framed
// by the records (-1, seq) before and (-2, seq) after, so that the test knows where a kill fell.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/checkpoint.h"
#include "core/load_state.h"
#include "helpers/crash_workload.h"

namespace {

void record(int64_t seq, uint64_t d) {
  char rec[16];
  std::memcpy(rec, &seq, 8);
  std::memcpy(rec + 8, &d, 8);
  if (::write(1, rec, sizeof rec) != static_cast<ssize_t>(sizeof rec)) std::_Exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: core_crash_writer EVENTS_DB SEED [CHECKPOINT_EVERY]\n");
    return 2;
  }
  try {
    std::string path = argv[1];
    uint64_t seed = std::strtoull(argv[2], nullptr, 10);
    int64_t every = argc == 4 ? std::strtoll(argv[3], nullptr, 10) : 0;
    auto mode = std::filesystem::exists(path) ? marathon::EventStore::Mode::kOpen
                                              : marathon::EventStore::Mode::kCreate;
    auto store = marathon::EventStore::open(path, mode);
    marathon::State state;
    if (every > 0) state = marathon::load_state(*store);
    crashtest::run_writer(*store, seed, [&](int64_t seq, uint64_t d) {
      record(seq, d);
      if (every <= 0 || seq <= state.last_seq) return;
      for (const marathon::Event& e : store->read(state.last_seq + 1)) apply(state, e);
      record(-1, static_cast<uint64_t>(state.last_seq));
      marathon::maybe_write_checkpoint(*store, state, every);
      record(-2, static_cast<uint64_t>(state.last_seq));
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "core_crash_writer: %s\n", e.what());
    return 1;
  }
}
