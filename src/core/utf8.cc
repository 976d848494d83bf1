#include "core/utf8.h"

namespace marathon {

namespace {

// The length of the well-formed sequence at the start of `s`, or 0 when it is ill-formed; then
// *subpart is how many bytes form its maximal ill-formed subpart (at least 1).
size_t sequence_length(std::string_view s, size_t* subpart) {
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = b(0);
  *subpart = 1;
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0, C1 or F5..FF
  }
  for (size_t i = 1; i < n; ++i) {
    if (i >= s.size()) return 0;
    unsigned char x = b(i);
    bool ok = i == 1 ? (x >= lo && x <= hi) : (x >= 0x80 && x <= 0xBF);
    if (!ok) return 0;
    *subpart = i + 1;
  }
  return n;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) {
  size_t i = 0, subpart = 0;
  while (i < bytes.size()) {
    size_t n = sequence_length(bytes.substr(i), &subpart);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string valid_utf8(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 16);
  size_t i = 0, subpart = 0;
  while (i < bytes.size()) {
    size_t n = sequence_length(bytes.substr(i), &subpart);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += subpart;
    } else {
      out.append(bytes.data() + i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace marathon
