// The result cache: keys that say "this exact evaluation was already paid for", and the lookup in
// the log's State::eval_cache (docs/evaluation.md, "The result cache").
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/confined_path.h"
#include "core/state.h"
#include "goal/task_spec.h"

namespace marathon::eval {

// Pure: sha256 over "path\0sha\0" for each (path, content sha256) in sorted path order.
std::string candidate_hash(const std::map<std::string, std::string>& path_to_sha);

// Pure: the candidate hash of a workspace map (path -> content sha, e.g. State::workspace),
// restricted to the task's editable files.
std::string candidate_hash_of(const TaskSpec& task,
                              const std::map<std::string, std::string>& workspace);

// One editable entry of a candidate folder, as it is on disk.
struct CandidateFile {
  std::string path;  // relative to the folder
  EntryKind kind = EntryKind::kFile;
  std::string bytes;  // kFile
  // What the candidate hash takes for this entry: sha256 of the bytes for a regular file,
  // "link:<target>" for a symbolic link (never followed, never skipped), "special:<kind>" for a
  // FIFO, socket or device (never opened). Only a regular file's is a blob hash.
  std::string hash_value;
};

inline constexpr size_t kMaxCandidateFileBytes = 64 << 20;

// The entries under `dir` whose path matches the task's editable globs, found by a walk that
// follows no link (core/confined_dir.h), in path order. Throws std::runtime_error naming the folder
// or file it cannot read, or a file above max_file_bytes.
std::vector<CandidateFile> read_candidate(const TaskSpec& task, const std::filesystem::path& dir,
                                          size_t max_file_bytes = kMaxCandidateFileBytes);

// read_candidate as the candidate hash's input: relative path -> hash_value.
std::map<std::string, std::string> editable_files(const TaskSpec& task,
                                                  const std::filesystem::path& dir);

// Pure: why these entries are no candidate to evaluate, or "" when they are one. A candidate is
// one or more regular files: none at all (every editable file deleted or moved) would be judged
// on nothing, and a link or special file would be judged on bytes the hash does not cover (a link's
// target can change while the hash stays), so a result cached for it could be served for a
// different kernel.
std::string candidate_refusal(const TaskSpec& task, const std::vector<CandidateFile>& files);

// Pure: sha256(canonical task JSON "\n" candidate hash "\n" evaluator version "\n" device).
std::string cache_key(const TaskSpec& task, const std::string& candidate_hash,
                      const std::string& device);
std::string cache_key(const json& task_json, const std::string& candidate_hash,
                      const std::string& device);

// Pure: the device string from `nvidia-smi --query-gpu=name --format=csv,noheader` output (the
// first line, trimmed), or "cpu" when there is none.
std::string device_from_nvidia_smi(const std::optional<std::string>& output);

// The device of this machine: runs nvidia-smi once per process (2 s timeout) and remembers it.
std::string detect_device();

// Pure: the cached result for `key` in the log, if an `ok` evaluation with that key was recorded.
std::optional<EvalCacheEntry> cached_result(const State& state, const std::string& key);

}  // namespace marathon::eval
