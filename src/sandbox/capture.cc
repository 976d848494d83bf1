#include "sandbox/capture.h"

#include <algorithm>

namespace marathon::sandbox {

void Capture::append(const char* data, size_t n) {
  total_ += n;
  size_t to_head = std::min(n, head_cap_ - std::min(head_cap_, head_.size()));
  head_.append(data, to_head);
  data += to_head;
  n -= to_head;
  if (n == 0 || tail_cap_ == 0) return;
  if (n >= tail_cap_) {  // the chunk alone fills the tail
    ring_.assign(data + n - tail_cap_, tail_cap_);
    ring_pos_ = 0;
    tail_len_ = tail_cap_;
    return;
  }
  if (ring_.size() < tail_cap_) ring_.resize(tail_cap_);
  for (size_t i = 0; i < n; ++i) {
    size_t at = (ring_pos_ + tail_len_) % tail_cap_;
    ring_[at] = data[i];
    if (tail_len_ < tail_cap_) {
      ++tail_len_;
    } else {
      ring_pos_ = (ring_pos_ + 1) % tail_cap_;
    }
  }
}

std::string Capture::tail() const {
  std::string out;
  out.reserve(tail_len_);
  for (size_t i = 0; i < tail_len_; ++i) out.push_back(ring_[(ring_pos_ + i) % tail_cap_]);
  return out;
}

}  // namespace marathon::sandbox
