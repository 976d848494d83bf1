// Capture: the output of a process kept as its first `head` bytes and its last `tail` bytes, with
// the total counted. Memory stays bounded however much the process writes.
#pragma once

#include <cstddef>
#include <string>

namespace marathon::sandbox {

class Capture {
 public:
  Capture(size_t head, size_t tail) : head_cap_(head), tail_cap_(tail) {}

  void append(const char* data, size_t n);

  const std::string& head() const { return head_; }
  std::string tail() const;  // the last bytes after the head (empty when none were dropped)
  size_t total() const { return total_; }
  bool truncated() const { return total_ > head_.size() + tail_len_; }

  // Everything when nothing was dropped; else head + `gap(dropped bytes)` + tail.
  template <typename Gap>
  std::string text(Gap gap) const {
    if (!truncated()) return head_ + tail();
    return head_ + gap(total_ - head_.size() - tail_len_) + tail();
  }
  std::string text() const {
    return text([](size_t n) { return "\n[... " + std::to_string(n) + " bytes not kept ...]\n"; });
  }

 private:
  size_t head_cap_, tail_cap_;
  std::string head_;
  std::string ring_;  // tail_cap_ bytes once full; ring_pos_ is the oldest
  size_t ring_pos_ = 0;
  size_t tail_len_ = 0;  // bytes held in ring_
  size_t total_ = 0;
};

}  // namespace marathon::sandbox
