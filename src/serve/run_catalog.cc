#include "serve/run_catalog.h"

#include <algorithm>
#include <stdexcept>
#include <system_error>

#include "core/run_dir.h"

namespace marathon::serve {

namespace fs = std::filesystem;

bool is_valid_run_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(id[0])) return false;
  return std::all_of(id.begin(), id.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

namespace {

// A real folder (not a link to one) holding a regular events.db (not a link to one).
bool is_run_folder(const fs::path& dir) {
  std::error_code ec;
  if (fs::symlink_status(dir, ec).type() != fs::file_type::directory) return false;
  return fs::symlink_status(dir / kEventsDbName, ec).type() == fs::file_type::regular;
}

}  // namespace

RunCatalog::RunCatalog(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) {
    throw std::invalid_argument("runs folder " + root_.string() + " is not a directory");
  }
}

std::vector<std::string> RunCatalog::list() const {
  std::vector<std::string> ids;
  std::error_code ec;
  for (auto it = fs::directory_iterator(root_, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (is_valid_run_id(name) && is_run_folder(it->path())) ids.push_back(name);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

RunLookup RunCatalog::find(std::string_view id, fs::path* dir) const {
  if (!is_valid_run_id(id)) return RunLookup::kBadId;
  fs::path p = root_ / std::string(id);
  if (!is_run_folder(p)) return RunLookup::kNotFound;
  if (dir) *dir = p;
  return RunLookup::kFound;
}

}  // namespace marathon::serve
