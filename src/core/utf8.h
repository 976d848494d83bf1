// Bytes from outside (a subprocess's stdout or stderr, a file) as text that JSON can carry.
// Pure.
#pragma once

#include <string>
#include <string_view>

namespace marathon {

// True when `bytes` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

// `bytes` with each ill-formed part replaced by U+FFFD (one per maximal ill-formed subpart, as
// Unicode recommends); well-formed text comes back unchanged.
std::string valid_utf8(std::string_view bytes);

}  // namespace marathon
