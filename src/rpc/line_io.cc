#include "rpc/line_io.h"

#include <errno.h>
#include <unistd.h>

#include <csignal>

namespace marathon::rpc {

std::optional<LineReader::Line> LineReader::next() {
  Line line;
  bool dropping = false;
  for (;;) {
    size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos || (eof_ && pos_ < buf_.size())) {
      size_t end = nl == std::string::npos ? buf_.size() : nl;
      if (dropping || end - pos_ > max_) {
        line.too_long = true;
      } else {
        line.text.assign(buf_, pos_, end - pos_);
        if (!line.text.empty() && line.text.back() == '\r') line.text.pop_back();
      }
      pos_ = nl == std::string::npos ? buf_.size() : nl + 1;
      return line;
    }
    if (eof_) {
      if (dropping) {  // an over-long last line without a newline
        line.too_long = true;
        return line;
      }
      return std::nullopt;
    }
    // Keep at most one line (and a read's worth) in memory: an over-long line is dropped as it
    // comes.
    buf_.erase(0, pos_);
    pos_ = 0;
    if (buf_.size() > max_) {
      dropping = true;
      buf_.clear();
    }
    char chunk[65536];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      continue;
    }
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

bool LineWriter::write(const json& message) {
  std::string text = message.dump(-1, ' ', false, json::error_handler_t::replace);
  text.push_back('\n');
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool LineWriter::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

void ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }

}  // namespace marathon::rpc
