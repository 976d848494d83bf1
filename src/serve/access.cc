#include "serve/access.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <stdexcept>

namespace marathon::serve {

namespace {

// The host part of a Host header: "127.0.0.1:8080" -> "127.0.0.1", "[::1]:80" -> "::1".
std::string_view host_part(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    return close == std::string_view::npos ? host : host.substr(1, close - 1);
  }
  size_t colon = host.rfind(':');
  return colon == std::string_view::npos ? host : host.substr(0, colon);
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool is_loopback_address(std::string_view a) {
  if (a == "localhost" || a == "::1") return true;
  // Dotted IPv4 whose first part is 127: four parts of 1 to 3 digits, each at most 255.
  int parts = 0;
  size_t start = 0;
  while (start <= a.size()) {
    size_t dot = a.find('.', start);
    std::string_view part = a.substr(start, dot == std::string_view::npos ? a.npos : dot - start);
    if (part.empty() || part.size() > 3) return false;
    int value = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    if (value > 255 || (parts == 0 && value != 127)) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts == 4;
}

std::string generate_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    throw std::runtime_error("cannot generate a token: OpenSSL's random generator failed");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

bool token_matches(std::string_view given, std::string_view expected) {
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(given.data()), given.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0;
}

Denial check_access(const AccessPolicy& policy, const RequestFacts& r) {
  if (policy.loopback && !is_loopback_address(host_part(r.host))) return Denial::kBadHost;
  if (!policy.token.empty()) {
    if (r.bearer.empty()) return Denial::kMissingToken;
    if (!token_matches(r.bearer, policy.token)) return Denial::kWrongToken;
  }
  if (r.write) {
    if (!starts_with(r.content_type, "application/json")) return Denial::kNotJson;
    if (!r.origin.empty()) {
      std::string_view o = r.origin;
      size_t scheme = o.find("://");
      if (scheme == std::string_view::npos || o.substr(scheme + 3) != r.host) {
        return Denial::kBadOrigin;
      }
    }
  }
  return Denial::kNone;
}

int http_status(Denial d) {
  switch (d) {
    case Denial::kNone:
      return 200;
    case Denial::kMissingToken:
      return 401;
    case Denial::kNotJson:
      return 415;
    case Denial::kWrongToken:
    case Denial::kBadHost:
    case Denial::kBadOrigin:
      return 403;
  }
  return 403;
}

const char* explain(Denial d) {
  switch (d) {
    case Denial::kNone:
      return "";
    case Denial::kMissingToken:
      return "this dashboard needs its token: open the URL `marathon serve` printed, or send "
             "Authorization: Bearer TOKEN";
    case Denial::kWrongToken:
      return "wrong token";
    case Denial::kBadHost:
      return "this dashboard serves loopback hosts only (the Host header names another)";
    case Denial::kNotJson:
      return "a request that changes a run must be sent as application/json";
    case Denial::kBadOrigin:
      return "a request that changes a run must come from the dashboard's own page";
  }
  return "denied";
}

}  // namespace marathon::serve
