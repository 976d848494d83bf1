// Who may use the dashboard. Bound to a loopback address it serves this machine's users without a
// token (unless one was given); bound to any other address it requires the token on every API
// request: `Authorization: Bearer TOKEN`, or `?token=TOKEN` (EventSource cannot send headers).
// Tokens are compared in constant time. Two checks guard a loopback server against web pages in
// the user's browser: the Host header must name a loopback host (DNS rebinding), and a request
// that changes a run must be JSON (a cross-site form cannot send it without a CORS preflight, which
// is never granted) and, when it carries an Origin, come from the dashboard's own origin.
#pragma once

#include <string>
#include <string_view>

namespace marathon::serve {

bool is_loopback_address(std::string_view address);  // 127.0.0.0/8, ::1, localhost

// 32 random bytes as 64 hex digits (OpenSSL's RAND_bytes). Throws std::runtime_error if the
// generator fails.
std::string generate_token();

// `given` equals `expected`, in time independent of where they differ (both are hashed first, so
// their lengths do not show either).
bool token_matches(std::string_view given, std::string_view expected);

enum class Denial {
  kNone,
  kMissingToken,  // 401
  kWrongToken,    // 403
  kBadHost,       // 403: a loopback server asked for under another name
  kNotJson,       // 415: a write that is not application/json
  kBadOrigin,     // 403: a write from another origin
};

struct AccessPolicy {
  bool loopback = true;  // bound to a loopback address
  std::string token;     // required when not empty
};

struct RequestFacts {
  std::string_view host;          // the Host header
  std::string_view origin;        // the Origin header ("" when absent)
  std::string_view bearer;        // the token from Authorization: Bearer, or ?token=
  std::string_view content_type;  // for writes
  bool write = false;             // a request that changes a run (POST)
};

Denial check_access(const AccessPolicy& policy, const RequestFacts& r);
int http_status(Denial d);
const char* explain(Denial d);

}  // namespace marathon::serve
