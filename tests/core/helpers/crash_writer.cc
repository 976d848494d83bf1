// Child of the SIGKILL crash test: opens (or creates) the log at argv[1] and appends the
// deterministic workload of seed argv[2] until killed, writing a 16-byte acknowledgement
// (seq, digest) to stdout after each append returns.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "helpers/crash_workload.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: core_crash_writer EVENTS_DB SEED\n");
    return 2;
  }
  try {
    std::string path = argv[1];
    uint64_t seed = std::strtoull(argv[2], nullptr, 10);
    auto mode = std::filesystem::exists(path) ? marathon::EventStore::Mode::kOpen
                                              : marathon::EventStore::Mode::kCreate;
    auto store = marathon::EventStore::open(path, mode);
    crashtest::run_writer(*store, seed, [](int64_t seq, uint64_t d) {
      char rec[16];
      std::memcpy(rec, &seq, 8);
      std::memcpy(rec + 8, &d, 8);
      if (::write(1, rec, sizeof rec) != static_cast<ssize_t>(sizeof rec)) std::_Exit(3);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "core_crash_writer: %s\n", e.what());
    return 1;
  }
}
