#include "core/run_dir.h"

#include <openssl/rand.h>

#include <system_error>

#include "core/event_store.h"

namespace marathon {

namespace fs = std::filesystem;

RunDir existing_run_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw StoreError("run directory " + dir.string() + ": does not exist");
  if (!fs::is_directory(dir, ec)) {
    throw StoreError("run directory " + dir.string() + ": is not a directory");
  }
  RunDir r{dir};
  if (!fs::exists(r.events_db(), ec)) {
    throw StoreError("run directory " + dir.string() + ": has no " + kEventsDbName +
                     " (not a marathon run directory)");
  }
  return r;
}

namespace {
// Empty, or holding only the lock file its creator took (core/run_lock.h).
bool empty_but_for_lock(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename() != kLockFileName) return false;
  }
  return !ec;
}
}  // namespace

RunDir create_run_dir(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !(fs::is_directory(dir, ec) && empty_but_for_lock(dir))) {
    throw StoreError("run directory " + dir.string() + ": already exists and is not empty");
  }
  RunDir r{dir};
  fs::create_directories(r.workspace(), ec);
  if (ec) throw StoreError("run directory " + dir.string() + ": cannot create: " + ec.message());
  return r;
}

std::string new_run_id() {
  unsigned char b[8];
  if (RAND_bytes(b, sizeof b) != 1) throw StoreError("cannot generate a run id: RAND_bytes");
  static const char* kHex = "0123456789abcdef";
  std::string id = "run-";
  for (unsigned char c : b) {
    id += kHex[c >> 4];
    id += kHex[c & 0xf];
  }
  return id;
}

}  // namespace marathon
