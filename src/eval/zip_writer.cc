#include "eval/zip_writer.h"

#include <array>
#include <stdexcept>

namespace marathon::eval {

namespace {

void put16(std::string& out, uint32_t v) {
  out.push_back(char(v & 0xff));
  out.push_back(char((v >> 8) & 0xff));
}
void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}

constexpr uint32_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01: the archive is reproducible

void check_path(const std::string& p) {
  if (p.empty() || p.front() == '/')
    throw std::invalid_argument("zip: bad entry path \"" + p + "\"");
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    std::string part =
        p.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part == ".." || part.empty()) {
      throw std::invalid_argument("zip: bad entry path \"" + p + "\"");
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
}

}  // namespace

uint32_t crc32(const std::string& bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = table[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string zip_stored(const std::vector<ZipEntry>& entries) {
  if (entries.size() > 0xFFFF) throw std::invalid_argument("zip: more than 65535 entries");
  std::string out, central;
  for (const ZipEntry& e : entries) {
    check_path(e.path);
    if (out.size() + e.bytes.size() + e.path.size() + 64 > 0xFFFFFFFFull) {
      throw std::invalid_argument("zip: the archive would exceed 4 GiB");
    }
    uint32_t offset = uint32_t(out.size());
    uint32_t crc = crc32(e.bytes);
    uint32_t size = uint32_t(e.bytes.size());
    put32(out, 0x04034b50);
    put16(out, 20);  // version needed: 2.0
    put16(out, 0);   // flags
    put16(out, 0);   // method: stored
    put16(out, 0);   // time
    put16(out, kDosDate);
    put32(out, crc);
    put32(out, size);
    put32(out, size);
    put16(out, uint32_t(e.path.size()));
    put16(out, 0);  // extra
    out += e.path;
    out += e.bytes;

    put32(central, 0x02014b50);
    put16(central, (3 << 8) | 20);  // made by: Unix, 2.0
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, kDosDate);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    put16(central, uint32_t(e.path.size()));
    put16(central, 0);                                     // extra
    put16(central, 0);                                     // comment
    put16(central, 0);                                     // disk
    put16(central, 0);                                     // internal attributes
    put32(central, (0100000u | (e.mode & 07777u)) << 16);  // a regular file with its mode
    put32(central, offset);
    central += e.path;
  }
  uint32_t cd_offset = uint32_t(out.size());
  out += central;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, uint32_t(entries.size()));
  put16(out, uint32_t(entries.size()));
  put32(out, uint32_t(central.size()));
  put32(out, cd_offset);
  put16(out, 0);
  return out;
}

}  // namespace marathon::eval
