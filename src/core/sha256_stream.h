// Sha256Stream: sha256 over pieces fed one after another, so a text that exists only as its parts
// (a prompt's messages, each serialised once and cached) is hashed without being joined.
// hex() of the pieces equals sha256_hex (core/event_store.h) of their concatenation. Both are in
// core/sha256.cc.
#pragma once

#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace marathon {

class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;

  void add(std::string_view bytes);
  std::string hex();  // lowercase; ends the stream

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

}  // namespace marathon
