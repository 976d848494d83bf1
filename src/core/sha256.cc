// sha256_hex, the content address of blobs, and Sha256Stream, the same over pieces (OpenSSL EVP).
#include <openssl/evp.h>

#include <stdexcept>
#include <string>

#include "core/event_store.h"
#include "core/sha256_stream.h"

namespace marathon {
namespace {

std::string to_hex(const unsigned char* digest, unsigned int len) {
  static const char* kHex = "0123456789abcdef";
  std::string out(2 * len, '0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return out;
}

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("sha256: EVP_Digest failed");
  }
  return to_hex(digest, len);
}

void Sha256Stream::Free::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("sha256: EVP_DigestInit_ex failed");
  }
}

Sha256Stream::~Sha256Stream() = default;

void Sha256Stream::add(std::string_view bytes) {
  if (EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1) {
    throw std::runtime_error("sha256: EVP_DigestUpdate failed");
  }
}

std::string Sha256Stream::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), digest, &len) != 1) {
    throw std::runtime_error("sha256: EVP_DigestFinal_ex failed");
  }
  return to_hex(digest, len);
}

}  // namespace marathon
