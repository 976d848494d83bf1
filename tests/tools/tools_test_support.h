// A temporary workspace and a ToolContext whose blob store is a map, for the tool tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "core/event_store.h"
#include "tools/tool.h"

namespace marathon::testing {

class TempWorkspace {
 public:
  TempWorkspace() {
    std::random_device rd;
    base_ = std::filesystem::temp_directory_path() /
            ("marathon-tools-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(base_ / "ws");
    std::filesystem::create_directories(base_ / "outside");
    ctx.workspace = base_ / "ws";
    ctx.run_dir = base_;
    ctx.put_blob = [this](const std::string& bytes) {
      std::string sha = sha256_hex(bytes);
      blobs[sha] = bytes;
      return sha;
    };
    ctx.get_blob = [this](const std::string& sha) { return blobs.at(sha); };
  }
  ~TempWorkspace() {
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }
  std::filesystem::path ws() const { return base_ / "ws"; }
  std::filesystem::path outside() const { return base_ / "outside"; }
  void write(const std::string& rel, const std::string& bytes) const {
    auto p = ws() / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
  }
  std::string read(const std::filesystem::path& p) const {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  ToolContext ctx;
  std::map<std::string, std::string> blobs;

 private:
  std::filesystem::path base_;
};

}  // namespace marathon::testing
