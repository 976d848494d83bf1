#include "serve/bounded_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <string>

namespace marathon::serve {

namespace {

using Clock = std::chrono::steady_clock;

enum class Refusal { kNone, kHead, kBody, kTime };

int poll_one(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r > 0 && (p.revents & (events | POLLHUP | POLLERR)) == 0) return 0;
  return r;
}

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  int r = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n)
               : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  if (r != 0) return;
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> serv{};
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&a), n, host.data(), host.size(), serv.data(),
                    serv.size(), NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host.data();
    port = std::atoi(serv.data());
  }
}

// One connection's socket, read under the limits, one request at a time (begin_request()).
class BoundedStream : public httplib::Stream {
 public:
  BoundedStream(int sock, const RequestLimits& limits, time_t read_timeout_s,
                time_t write_timeout_s)
      : sock_(sock),
        limits_(limits),
        read_timeout_ms_(static_cast<int>(std::max<time_t>(1, read_timeout_s) * 1000)),
        write_timeout_ms_(static_cast<int>(std::max<time_t>(1, write_timeout_s) * 1000)) {}

  void begin_request() {
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(limits_.max_request_s));
    in_head_ = true;
    head_bytes_ = body_bytes_ = 0;
    line_len_ = 0;
    lines_ = 0;
    prev_ = 0;
  }
  Refusal refusal() const { return refusal_; }

  bool is_readable() const override {
    if (off_ < len_) return true;
    return poll_one(sock_, POLLIN, std::min(read_timeout_ms_, remaining_ms())) > 0;
  }
  bool is_writable() const override {
    if (refusal_ != Refusal::kNone) return false;
    if (poll_one(sock_, POLLOUT, write_timeout_ms_) <= 0) return false;
    // Alive: nothing to read, or something (not the end) to read.
    if (poll_one(sock_, POLLIN, 0) == 0) return true;
    char c;
    return ::recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (refusal_ != Refusal::kNone || size == 0) return -1;
    if (off_ == len_) {
      int wait = remaining_ms();
      if (wait <= 0) return refuse(Refusal::kTime);
      // No byte for the read timeout, or none before the request's time is up: 408 either way.
      if (poll_one(sock_, POLLIN, std::min(read_timeout_ms_, wait)) <= 0) {
        return refuse(Refusal::kTime);
      }
      ssize_t n;
      do {
        n = ::recv(sock_, buf_.data(), buf_.size(), 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      off_ = 0;
      len_ = static_cast<size_t>(n);
    }
    size_t give = std::min(size, len_ - off_);
    if (in_head_) {
      // The head ends at its first empty line (CRLF) after the request line, as httplib reads it.
      size_t k = 0;
      while (k < give && in_head_) {
        unsigned char c = static_cast<unsigned char>(buf_[off_ + k]);
        if (++head_bytes_ > limits_.max_head_bytes) return refuse(Refusal::kHead);
        if (c == '\n') {
          if (lines_ > 0 && line_len_ == 1 && prev_ == '\r') in_head_ = false;
          ++lines_;
          line_len_ = 0;
        } else {
          ++line_len_;
        }
        prev_ = c;
        ++k;
      }
      give = k;
    } else {
      if (body_bytes_ >= limits_.max_body_bytes) return refuse(Refusal::kBody);
      give = std::min(give, limits_.max_body_bytes - body_bytes_);
      body_bytes_ += give;
    }
    std::copy_n(buf_.data() + off_, give, ptr);
    off_ += give;
    return static_cast<ssize_t>(give);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (refusal_ != Refusal::kNone) return -1;  // the refusal is the answer (answer_refusal())
    return send_all(ptr, size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, false, ip, port);
  }
  socket_t socket() const override { return sock_; }

  // The answer to a refused request, written once httplib has given up on it.
  void answer_refusal() {
    int status = refusal_ == Refusal::kHead ? 431 : refusal_ == Refusal::kBody ? 413 : 408;
    std::string what = refusal_ == Refusal::kHead
                           ? "the request line and headers are larger than the limit (" +
                                 std::to_string(limits_.max_head_bytes) + " bytes)"
                       : refusal_ == Refusal::kBody
                           ? "the request body is larger than the limit"
                           : "the request did not arrive in time (" +
                                 std::to_string(static_cast<long long>(limits_.max_request_s)) +
                                 " s for the whole request, " +
                                 std::to_string(read_timeout_ms_ / 1000) + " s for each part)";
    std::string body = "{\"error\":\"" + what + "\"}";
    const char* reason = refusal_ == Refusal::kHead   ? "Request Header Fields Too Large"
                         : refusal_ == Refusal::kBody ? "Payload Too Large"
                                                      : "Request Timeout";
    std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                       "\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
                       "Connection: close\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n";
    std::string all = head + body;
    send_all(all.data(), all.size());
    // The rest of what the client sends is read and dropped for a moment: closing a socket with
    // unread bytes resets the connection, and the client could lose the answer with it.
    ::shutdown(sock_, SHUT_WR);
    auto until = Clock::now() + std::chrono::seconds(1);
    std::array<char, 16384> sink{};
    while (Clock::now() < until) {
      int ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count());
      if (poll_one(sock_, POLLIN, std::max(ms, 1)) <= 0) break;
      ssize_t n = ::recv(sock_, sink.data(), sink.size(), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
    }
  }

 private:
  int remaining_ms() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
  }
  ssize_t refuse(Refusal r) {
    refusal_ = r;
    return -1;
  }
  ssize_t send_all(const char* ptr, size_t size) {
    size_t done = 0;
    while (done < size) {
      if (poll_one(sock_, POLLOUT, write_timeout_ms_) <= 0) return done ? ssize_t(done) : -1;
      ssize_t n = ::send(sock_, ptr + done, size - done, MSG_NOSIGNAL);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) return done ? ssize_t(done) : -1;
      done += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(done);
  }

  int sock_;
  RequestLimits limits_;
  int read_timeout_ms_, write_timeout_ms_;
  Clock::time_point deadline_ = Clock::now();
  std::array<char, 4096> buf_{};
  size_t off_ = 0, len_ = 0;
  Refusal refusal_ = Refusal::kNone;
  bool in_head_ = true;
  size_t head_bytes_ = 0, body_bytes_ = 0, line_len_ = 0, lines_ = 0;
  unsigned char prev_ = 0;
};

class BoundedServer : public httplib::Server {
 public:
  explicit BoundedServer(const RequestLimits& limits) : limits_(limits) {}

 private:
  // httplib's own loop over a connection's requests (keep-alive), each read through the stream.
  bool process_and_close_socket(socket_t sock) override {
    BoundedStream strm(sock, limits_, read_timeout_sec_, write_timeout_sec_);
    bool ret = false;
    size_t count = keep_alive_max_count_;
    while (count > 0 && next_request(sock)) {
      strm.begin_request();
      bool connection_closed = false;
      ret = process_request(strm, count == 1, connection_closed, nullptr);
      if (strm.refusal() != Refusal::kNone) {
        strm.answer_refusal();
        ret = false;
        break;
      }
      if (!ret || connection_closed) break;
      --count;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
  }

  // True when the connection has a byte of the next request before the keep-alive timeout, and
  // the server still runs.
  bool next_request(int sock) const {
    auto until = Clock::now() + std::chrono::seconds(std::max<time_t>(1, keep_alive_timeout_sec_));
    while (svr_sock_ != INVALID_SOCKET && Clock::now() < until) {
      int r = poll_one(sock, POLLIN, 100);
      if (r < 0) return false;
      if (r > 0) return true;
    }
    return false;
  }

  RequestLimits limits_;
};

}  // namespace

std::unique_ptr<httplib::Server> make_bounded_server(const RequestLimits& limits) {
  return std::make_unique<BoundedServer>(limits);
}

}  // namespace marathon::serve
