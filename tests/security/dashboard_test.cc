// A hostile local client against the real `marathon serve` on loopback (which needs no token): a
// chunked POST far over the 64 KiB body limit, request headers past their limit, and headers
// dribbled one byte at a time. Each is answered with its 4xx and the connection closed, without
// the server reading the body whole (its peak memory stays small, the client could not send it),
// and the dashboard serves the next request.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <regex>

#include "hostile_run.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::read_text;
using testing::TempDir;

// `marathon serve --port 0` on an empty runs folder; the port from the line it prints.
class LiveDashboard {
 public:
  explicit LiveDashboard(const TempDir& dir)
      : runs_(dir / "runs"),
        log_(dir / "serve.log"),
        child_(
            [&] {
              fs::create_directories(dir / "runs");
              return std::vector<std::string>{MARATHON_BINARY,         "serve",  "--runs",
                                              (dir / "runs").string(), "--port", "0"};
            }(),
            {}, dir / "serve.log") {
    const std::regex url(R"(http://127\.0\.0\.1:(\d+)/)");
    for (auto until = Clock::now() + std::chrono::seconds(30); Clock::now() < until;) {
      std::smatch m;
      std::string text = read_text(log_);
      if (std::regex_search(text, m, url)) {
        port_ = std::stoi(m[1]);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  int port() const { return port_; }
  pid_t pid() const { return child_.pid(); }
  std::string log() const { return read_text(log_); }

 private:
  fs::path runs_, log_;
  testing::Child child_;
  int port_ = 0;
};

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) > 0;
}

// Sends all of `s` (false when the server closed or did not take it within 10 s).
bool send_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 10000) <= 0 || (p.revents & (POLLERR | POLLHUP))) return false;
    ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// What the server answered, read until it closes (at most `seconds`).
std::string answer(int fd, double seconds = 10) {
  std::string out;
  char buf[4096];
  for (auto until = Clock::now() + std::chrono::duration<double>(seconds); Clock::now() < until;) {
    if (!readable(fd, 100)) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// The peak resident memory of a process (VmHWM), in KiB.
long peak_kib(pid_t pid) {
  std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

std::string head(int port, const std::string& method, const std::string& path,
                 const std::string& more) {
  return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n" +
         more;
}

// The dashboard still answers a plain request.
void expect_serves(int port) {
  int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, head(port, "GET", "/api/runs", "Connection: close\r\n\r\n")));
  std::string a = answer(fd);
  ::close(fd);
  EXPECT_EQ(a.rfind("HTTP/1.1 200", 0), 0u) << a;
}

TEST(Dashboard, AChunkedPostFarOverTheLimitIsRefusedWithoutBeingReadWhole) {
  TempDir dir("dashboard-chunked");
  LiveDashboard d(dir);
  ASSERT_GT(d.port(), 0) << d.log();
  const long before = peak_kib(d.pid());

  int fd = connect_to(d.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, head(d.port(), "POST", "/api/runs/x/goal",
                                "Content-Type: application/json\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n")));
  // 512 MiB in 64 KiB chunks, sent until the server answers or stops taking them.
  const std::string chunk = "10000\r\n" + std::string(64 << 10, ' ') + "\r\n";
  const size_t total = size_t{512} << 20;
  size_t sent = 0;
  while (sent < total && !readable(fd, 0)) {
    if (!send_all(fd, chunk)) break;
    sent += 64 << 10;
  }
  std::string a = answer(fd);
  ::close(fd);
  EXPECT_EQ(a.rfind("HTTP/1.1 413", 0), 0u) << "sent " << (sent >> 20) << " MiB; answer: " << a;
  EXPECT_NE(a.find("larger than the limit"), std::string::npos) << a;
  EXPECT_LT(sent, size_t{32} << 20) << "the server took " << (sent >> 20) << " MiB of the body";
  const long after = peak_kib(d.pid());
  EXPECT_LT(after - before, 64 << 10)
      << "peak memory grew from " << before << " to " << after << " KiB";
  expect_serves(d.port());

  // A chunked body within the limit is read and routed (no such run: 404 from the handler).
  fd = connect_to(d.port());
  ASSERT_GE(fd, 0);
  const std::string body = R"({"verb":"set","text":"x"})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  ASSERT_TRUE(send_all(fd, head(d.port(), "POST", "/api/runs/x/goal",
                                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                                "Connection: close\r\n\r\n") +
                               size + "\r\n" + body + "\r\n0\r\n\r\n"));
  a = answer(fd);
  ::close(fd);
  EXPECT_EQ(a.rfind("HTTP/1.1 404", 0), 0u) << a;
}

TEST(Dashboard, HeadersPastTheLimitAreRefused) {
  TempDir dir("dashboard-headers");
  LiveDashboard d(dir);
  ASSERT_GT(d.port(), 0) << d.log();
  int fd = connect_to(d.port());
  ASSERT_GE(fd, 0);
  std::string many;
  for (int i = 0; i < 4000; ++i)
    many += "X-Filler-" + std::to_string(i) + ": " + std::string(80, 'a') + "\r\n";
  send_all(fd, head(d.port(), "GET", "/api/runs", many + "\r\n"));
  std::string a = answer(fd);
  ::close(fd);
  EXPECT_EQ(a.rfind("HTTP/1.1 431", 0), 0u) << a.substr(0, 300);
  expect_serves(d.port());
}

TEST(Dashboard, HeadersDribbledAByteAtATimeGetATimeoutNotAThreadForEver) {
  TempDir dir("dashboard-slow");
  LiveDashboard d(dir);
  ASSERT_GT(d.port(), 0) << d.log();
  int fd = connect_to(d.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, head(d.port(), "GET", "/api/runs", "X-Slow: ")));
  // A byte every 0.5 s: each read gets a byte well within httplib's own read timeout (5 s).
  const auto t0 = Clock::now();
  std::string a;
  while (Clock::now() - t0 < std::chrono::seconds(30)) {
    if (readable(fd, 500)) {
      a = answer(fd, 2);
      break;
    }
    if (!send_all(fd, "a")) {
      a = answer(fd, 2);
      break;
    }
  }
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(fd);
  EXPECT_EQ(a.rfind("HTTP/1.1 408", 0), 0u) << "after " << took << " s: " << a;
  EXPECT_LT(took, 20) << "the request was still being read after " << took << " s";
  expect_serves(d.port());
}

}  // namespace
}  // namespace marathon
