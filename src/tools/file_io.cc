#include "tools/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/event_store.h"

namespace marathon {
namespace fs = std::filesystem;

std::optional<std::string> read_whole_file(const fs::path& path, size_t max_bytes,
                                           std::string* error) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    *error = "no such file";
    return std::nullopt;
  }
  if (fs::is_directory(st)) {
    *error = "is a directory (use list_files)";
    return std::nullopt;
  }
  auto size = fs::file_size(path, ec);
  if (!ec && size > max_bytes) {
    *error = "file is " + std::to_string(size) + " bytes, more than the limit of " +
             std::to_string(max_bytes);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = std::string("cannot open: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool write_whole_file(const fs::path& path, const std::string& bytes, std::string* error) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    *error =
        "cannot create directory " + path.parent_path().filename().string() + ": " + ec.message();
    return false;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = std::string("cannot open for writing: ") + std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("write failed: ") + std::strerror(errno);
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    *error = std::string("close failed: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool looks_binary(const std::string& bytes) {
  return bytes.find('\0', 0) < std::min<size_t>(bytes.size(), 8192);
}

NewEvent workspace_written(const std::string& relative, const std::string& bytes,
                           ToolContext& ctx) {
  std::string sha = ctx.put_blob ? ctx.put_blob(bytes) : sha256_hex(bytes);
  events::WorkspaceWritten w;
  w.path = relative;
  w.sha = sha;
  w.size = static_cast<int64_t>(bytes.size());
  return make_event(w);
}

}  // namespace marathon
