// A zip archive of stored (uncompressed) entries, as Ray's runtime_env packages take them
// (a working_dir uploaded to the head's GCS). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace marathon::eval {

struct ZipEntry {
  std::string path;  // relative, '/'-separated, no ".." component
  std::string bytes;
  uint32_t mode = 0644;  // Unix permission bits
};

uint32_t crc32(const std::string& bytes);

// The archive's bytes. Throws std::invalid_argument for a path that is empty, absolute or holds a
// ".." component, and for an archive over 4 GiB or 65535 entries (zip64 is not written).
std::string zip_stored(const std::vector<ZipEntry>& entries);

}  // namespace marathon::eval
