// A child process of the real binary whose stdin and stdout are pipes held by the test: a client
// of `marathon serve --stdio` or `marathon mcp`. stderr goes to a file. Lines are read with a
// timeout, so a server that hangs fails the test instead of blocking it.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace marathon::testing {

class StdioChild {
 public:
  StdioChild(const std::vector<std::string>& argv, const std::filesystem::path& err_log) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      FILE* f = std::fopen(err_log.c_str(), "a");
      if (f) ::dup2(fileno(f), 2);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
    ::close(in[0]);
    ::close(out[1]);
    to_child_ = in[1];
    from_child_ = out[0];
    ::signal(SIGPIPE, SIG_IGN);  // a server gone while the test writes: an error, not a death
  }
  ~StdioChild() {
    close_stdin();
    if (from_child_ >= 0) ::close(from_child_);
    if (!reaped_ && pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }

  bool write_raw(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(to_child_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  bool send(const nlohmann::json& message) { return write_raw(message.dump() + "\n"); }
  void close_stdin() {
    if (to_child_ >= 0) ::close(to_child_);
    to_child_ = -1;
  }

  // The next line of stdout, or nullopt after `timeout_s` or at end of output.
  std::optional<std::string> read_line(double timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0 || eof_) return std::nullopt;
      pollfd p{from_child_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char chunk[65536];
      ssize_t n = ::read(from_child_, chunk, sizeof chunk);
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }
  std::optional<nlohmann::json> read_json(double timeout_s) {
    std::optional<std::string> line = read_line(timeout_s);
    if (!line) return std::nullopt;
    return nlohmann::json::parse(*line, nullptr, /*allow_exceptions=*/false);
  }

  // Waits up to `timeout_s` for the exit; the exit status, 128+N for signal N, nullopt if running.
  std::optional<int> wait_for(double timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string buf_;
  bool eof_ = false, reaped_ = false;
};

}  // namespace marathon::testing
