// sha256_hex: the content address of blobs (OpenSSL EVP).
#include <openssl/evp.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "core/event_store.h"

namespace marathon {

std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("sha256: EVP_Digest failed");
  }
  static const char* kHex = "0123456789abcdef";
  std::string out(2 * len, '0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return out;
}

}  // namespace marathon
