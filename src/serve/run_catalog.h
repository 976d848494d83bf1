// The runs folder a dashboard serves. A run is a folder directly under it (the run's id is the
// folder's name) that holds events.db. Ids are checked before any path is built from them, and
// nothing that is a link is followed, so no request reaches a file outside the folder.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace marathon::serve {

// A run id: 1 to 128 bytes of [A-Za-z0-9._-], the first a letter or digit (so never "." or "..",
// never a path, never an encoded one).
bool is_valid_run_id(std::string_view id);

enum class RunLookup { kFound, kBadId, kNotFound };

class RunCatalog {
 public:
  // Throws std::invalid_argument when `root` is not a directory.
  explicit RunCatalog(std::filesystem::path root);

  // The ids of the runs under the root, sorted. Entries that are links, that hold no regular
  // events.db, or whose names are not valid ids are left out.
  std::vector<std::string> list() const;

  // The run folder of `id`: kBadId for an id is_valid_run_id refuses, kNotFound when no run of
  // that name is there (or it is a link, or its events.db is not a regular file).
  RunLookup find(std::string_view id, std::filesystem::path* dir) const;

  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
};

}  // namespace marathon::serve
