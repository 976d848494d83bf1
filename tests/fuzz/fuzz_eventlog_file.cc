// Fuzz target: a damaged events.db. The input is the bytes of the database file (the seeds are
// small real logs, tests/fuzz/corpus/eventlog_file/). Each input is written to a private temp file
// and read the way `marathon status` and `resume` read a log: the checked open
// (core/event_store_open.cc), then load_state with and without checkpoints (core/load_state.cc,
// core/fold.cc, core/checkpoint.cc).
// Contracts held: every way a file can be bad is a StoreError (no other exception, no crash); a
// rejected file is never modified, and a read-only open never modifies one; when both loads succeed
// they give the same State; blobs named by the workspace either verify or throw StoreError.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/checkpoint.h"
#include "core/event_store.h"
#include "core/load_state.h"
#include "fuzz_check.h"

namespace {

namespace fs = std::filesystem;
using marathon::EventStore;
using marathon::StoreError;
using marathon::fuzz::expect;

// One private folder per process, in memory where the machine has /dev/shm; removed at exit.
struct WorkDir {
  std::string path;
  WorkDir() {
    std::string base =
        fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
    path = base + "/marathon-fuzz-eventlog-XXXXXX";
    if (!::mkdtemp(path.data())) marathon::fuzz::fail("cannot create a temp folder under " + base);
  }
  ~WorkDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const std::string& work_dir() {
  static const WorkDir dir;
  return dir.path;
}

void write_file(const std::string& path, std::string_view bytes) {
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  expect(out.good(), "cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void read_log(const std::string& path, std::string_view bytes) {
  std::unique_ptr<EventStore> store;
  try {
    store = EventStore::open(path, EventStore::Mode::kReadOnly);
  } catch (const StoreError&) {
    expect(read_file(path) == bytes, "a read-only open that rejected the file changed it");
    return;
  }
  std::optional<marathon::State> with_checkpoint, from_events;
  try {
    with_checkpoint = marathon::load_state(*store);
  } catch (const StoreError&) {
  }
  try {
    from_events = marathon::load_state(*store, INT64_MAX, {.use_checkpoints = false});
  } catch (const StoreError&) {
  }
  if (with_checkpoint && from_events) {
    expect(*with_checkpoint == *from_events,
           "load_state from a checkpoint and from the events disagree");
  }
  if (from_events) {
    for (const auto& [file, sha] : from_events->workspace) {
      try {
        auto blob = store->get_blob(sha);
        if (blob) expect(marathon::sha256_hex(*blob) == sha, "get_blob returned other bytes");
      } catch (const StoreError&) {
      }
    }
  }
  try {
    store->meta("run_id");
    store->last_seq();
  } catch (const StoreError&) {
  }
  store.reset();
  expect(read_file(path) == bytes, "reading a log through a read-only open changed the file");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = work_dir() + "/events.db";
  const std::string_view bytes = marathon::fuzz::bytes(data, size);
  write_file(path, bytes);
  read_log(path, bytes);
  // The read-write open (resume) must reject a damaged file without touching it.
  write_file(path, bytes);
  try {
    EventStore::open(path, EventStore::Mode::kOpen);
  } catch (const StoreError&) {
    expect(read_file(path) == bytes, "a read-write open that rejected the file changed it");
  }
  return 0;
}
