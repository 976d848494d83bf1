#include "core/checksum.h"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

namespace marathon::detail {

Checksum64::Checksum64() {
  static thread_local std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> holder(
      EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  ctx_ = holder.get();
  if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("sha256: cannot initialise a digest context");
  }
}

Checksum64& Checksum64::add(int64_t v) {
  EVP_DigestUpdate(ctx_, &v, sizeof v);
  return *this;
}

Checksum64& Checksum64::add(std::string_view s) {
  uint64_t n = s.size();
  EVP_DigestUpdate(ctx_, &n, sizeof n);
  EVP_DigestUpdate(ctx_, s.data(), s.size());
  return *this;
}

int64_t Checksum64::value() {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_, d, &len);
  int64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | d[i];
  return v;
}

}  // namespace marathon::detail
