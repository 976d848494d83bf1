// The result cache: keys that say "this exact evaluation was already paid for", and the lookup in
// the log's State::eval_cache (docs/evaluation.md, "The result cache").
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/state.h"
#include "goal/task_spec.h"

namespace marathon::eval {

// Pure: sha256 over "path\0sha\0" for each (path, content sha256) in sorted path order.
std::string candidate_hash(const std::map<std::string, std::string>& path_to_sha);

// Pure: the candidate hash of a workspace map (path -> content sha, e.g. State::workspace),
// restricted to the task's editable files.
std::string candidate_hash_of(const TaskSpec& task,
                              const std::map<std::string, std::string>& workspace);

// Reads the editable files under `dir` (recursively; regular files only, symlinks skipped):
// relative path -> sha256 of the content. Throws std::runtime_error naming a file it cannot read.
std::map<std::string, std::string> editable_files(const TaskSpec& task,
                                                  const std::filesystem::path& dir);

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
