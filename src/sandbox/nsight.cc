#include "sandbox/nsight.h"

#include <unistd.h>

#include <algorithm>

namespace marathon::sandbox {

namespace fs = std::filesystem;

namespace {

// A folder that holds ncu and what it needs beside it (a toolkit's bin/, holding only the
// wrapper, is not one).
bool is_install(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "ncu", ec) &&
         (fs::is_directory(dir / "sections", ec) || fs::is_directory(dir / "target", ec));
}

void add(std::vector<fs::path>& out, const fs::path& dir) {
  std::error_code ec;
  fs::path real = fs::canonical(dir, ec);
  if (ec || !is_install(real)) return;
  if (std::find(out.begin(), out.end(), real) == out.end()) out.push_back(real);
}

std::vector<fs::path> sorted_children(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<fs::path> nsight_compute_dirs(const std::string& path_var, const std::string& cuda_home,
                                          const fs::path& opt_root) {
  std::vector<fs::path> out;
  size_t start = 0;
  while (start <= path_var.size()) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    const fs::path dir = path_var.substr(start, end - start);
    start = end + 1;
    if (!dir.is_absolute()) continue;
    const fs::path ncu = dir / "ncu";
    if (::access(ncu.c_str(), X_OK) != 0) continue;
    std::error_code ec;
    fs::path real = fs::canonical(ncu, ec);
    if (!ec) add(out, real.parent_path());
    break;  // the ncu PATH finds, as a shell would
  }
  for (const fs::path& d : sorted_children(opt_root, "")) add(out, d);
  if (!cuda_home.empty()) {
    for (const fs::path& d : sorted_children(cuda_home, "nsight-compute")) add(out, d);
  }
  return out;
}

}  // namespace marathon::sandbox
