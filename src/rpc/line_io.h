// The stdio transport of both servers: newline-delimited JSON. LineReader reads lines of bounded
// length from a file descriptor; LineWriter writes one JSON value per line, whole, from any thread.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>

#include "core/event.h"

namespace marathon::rpc {

class LineReader {
 public:
  // A line longer than `max_bytes` is read to its end and dropped (next() says so).
  explicit LineReader(int fd, size_t max_bytes = 16u << 20) : fd_(fd), max_(max_bytes) {}

  struct Line {
    std::string text;       // without the newline (and without a trailing '\r')
    bool too_long = false;  // the line was dropped: text is empty
  };
  // The next line; nullopt at end of input (a last line without a newline is still returned) or
  // on a read error. Blocks.
  std::optional<Line> next();

 private:
  int fd_;
  size_t max_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
};

class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  // Writes `message` and a newline in one piece (no other line interleaves). False once the
  // reader has gone (EPIPE or any write error): later writes are dropped.
  bool write(const json& message);
  bool closed() const;

 private:
  int fd_;
  mutable std::mutex mu_;
  bool closed_ = false;
};

// Makes a write to a closed pipe an EPIPE error instead of a fatal SIGPIPE (the launcher restores
// the default in the processes it starts).
void ignore_sigpipe();

}  // namespace marathon::rpc
