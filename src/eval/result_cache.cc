#include "eval/result_cache.h"

#include <mutex>
#include <stdexcept>

#include "core/confined_dir.h"
#include "core/event_store.h"  // sha256_hex
#include "sandbox/launcher.h"

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

std::vector<CandidateFile> read_candidate(const TaskSpec& task, const fs::path& dir,
                                          size_t max_file_bytes) {
  FsResult<ConfinedDir> root = ConfinedDir::open(dir);
  if (!root.ok()) {
    throw std::runtime_error("candidate folder " + dir.string() + ": " + root.error().reason);
  }
  std::vector<CandidateFile> out;
  FsResult<size_t> walked = root->walk(
      ".",
      [&](const FileInfo& e) {
        if (e.kind == EntryKind::kDir) return true;
        if (is_editable(task, e.path)) out.push_back({e.path, e.kind, "", ""});
        return false;
      },
      Links::kNone);
  if (!walked.ok()) {
    throw std::runtime_error("cannot list candidate folder " + dir.string() + ": " +
                             walked.error().message());
  }
  for (CandidateFile& f : out) {
    if (f.kind == EntryKind::kLink) {
      FsResult<FileInfo> link = root->stat(f.path, Links::kNone);
      if (!link.ok()) {
        throw std::runtime_error("candidate file " + (dir / f.path).string() + ": " +
                                 link.error().reason);
      }
      f.kind = link->kind;  // kLink, unless it was replaced since the walk
      f.hash_value = "link:" + link->link_target;
    } else if (f.kind != EntryKind::kFile) {
      f.hash_value = "special:" + describe(f.kind);
    }
    if (f.kind != EntryKind::kFile) continue;
    FsResult<std::string> bytes = root->read(f.path, max_file_bytes, Links::kNone);
    if (!bytes.ok()) {
      throw std::runtime_error("cannot read candidate file " + (dir / f.path).string() + ": " +
                               bytes.error().reason);
    }
    f.bytes = std::move(bytes.value());
    f.hash_value = sha256_hex(f.bytes);
  }
  return out;
}

std::map<std::string, std::string> editable_files(const TaskSpec& task, const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (CandidateFile& f : read_candidate(task, dir)) out[f.path] = std::move(f.hash_value);
  return out;
}

std::string candidate_refusal(const TaskSpec& task, const std::vector<CandidateFile>& files) {
  for (const CandidateFile& f : files) {
    if (f.kind == EntryKind::kFile) continue;
    std::string what = f.kind == EntryKind::kLink
                           ? "a symbolic link (-> " + f.hash_value.substr(5) + ")"
                           : "a " + describe(f.kind);
    return "editable file '" + f.path + "' is " + what +
           "; a candidate is made of regular files only (write the file itself)";
  }
  if (files.empty()) {
    std::string globs;
    for (const std::string& g : task.editable) globs += (globs.empty() ? "" : ", ") + g;
    return "the workspace holds none of the task's editable files (" + globs +
           "); there is no candidate to evaluate";
  }
  return "";
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
    sandbox::LaunchSpec spec;
    spec.profile = sandbox::Profile::kHostTool;
    spec.isolation = sandbox::Isolation::kNone;
    spec.argv = {"nvidia-smi", "--query-gpu=name", "--format=csv,noheader"};
    spec.timeout_s = 2;
    spec.drain_s = 0.2;
    sandbox::LaunchResult p = sandbox::launch(spec);
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
