#include "eval/result_cache.h"

#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "core/event_store.h"  // sha256_hex
#include "eval/subprocess.h"

namespace marathon::eval {

namespace fs = std::filesystem;

std::string candidate_hash(const std::map<std::string, std::string>& path_to_sha) {
  std::string buf;
  for (const auto& [path, sha] : path_to_sha) {  // std::map: sorted by path
    buf += path;
    buf.push_back('\0');
    buf += sha;
    buf.push_back('\0');
  }
  return sha256_hex(buf);
}

std::string candidate_hash_of(const TaskSpec& task,
                              const std::map<std::string, std::string>& workspace) {
  std::map<std::string, std::string> files;
  for (const auto& [path, sha] : workspace) {
    if (is_editable(task, path)) files[path] = sha;
  }
  return candidate_hash(files);
}

std::map<std::string, std::string> editable_files(const TaskSpec& task, const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw std::runtime_error("candidate folder " + dir.string() + " does not exist");
  }
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    if (!is_editable(task, rel)) continue;
    std::ifstream in(it->path(), std::ios::binary);
    if (!in) throw std::runtime_error("cannot read candidate file " + it->path().string());
    std::stringstream ss;
    ss << in.rdbuf();
    out[rel] = sha256_hex(ss.str());
  }
  if (ec)
    throw std::runtime_error("cannot list candidate folder " + dir.string() + ": " + ec.message());
  return out;
}

std::string cache_key(const json& task_json, const std::string& candidate_hash,
                      const std::string& device) {
  std::string version;
  if (task_json.contains("evaluator") && task_json["evaluator"].contains("version")) {
    version = task_json["evaluator"]["version"].get<std::string>();
  }
  return sha256_hex(task_json.dump() + "\n" + candidate_hash + "\n" + version + "\n" + device);
}

std::string cache_key(const TaskSpec& task, const std::string& candidate_hash,
                      const std::string& device) {
  return cache_key(to_json(task), candidate_hash, device);
}

std::string device_from_nvidia_smi(const std::optional<std::string>& output) {
  if (!output) return "cpu";
  std::string line = output->substr(0, output->find('\n'));
  size_t b = line.find_first_not_of(" \t\r");
  size_t e = line.find_last_not_of(" \t\r");
  if (b == std::string::npos) return "cpu";
  return line.substr(b, e - b + 1);
}

std::string detect_device() {
  static std::once_flag once;
  static std::string device;
  std::call_once(once, [] {
    ProcessSpec spec;
    spec.argv = {"nvidia-smi", "--query-gpu=name", "--format=csv,noheader"};
    spec.timeout_s = 2;
    spec.drain_s = 0.2;
    ProcessResult p = run_process(spec);
    bool ok = p.started && !p.timed_out && p.signal == 0 && p.exit_code == 0;
    device = device_from_nvidia_smi(ok ? std::optional<std::string>(p.out) : std::nullopt);
  });
  return device;
}

std::optional<EvalCacheEntry> cached_result(const State& state, const std::string& key) {
  auto it = state.eval_cache.find(key);
  if (it == state.eval_cache.end()) return std::nullopt;
  std::optional<EvalCacheEntry> entry = read_eval_cache_entry(it->second);
  if (!entry || entry->status != EvalStatus::kOk) return std::nullopt;
  return entry;
}

}  // namespace marathon::eval
