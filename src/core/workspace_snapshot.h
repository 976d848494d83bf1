// The workspace as recorded in the log: path -> blob sha256, from workspace.written events.
// Used by fork (rebuild at a seq), revert (back to a candidate) and resume (restore the files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "core/event.h"

namespace marathon {

class EventStore;

using WorkspaceFiles = std::map<std::string, std::string>;  // relative path -> blob sha256

// Applies one workspace.written event (other types: no effect). Pure.
void apply_workspace_event(WorkspaceFiles& files, const Event& e);

// The workspace as of `at_seq` (every workspace.written with seq <= at_seq).
WorkspaceFiles workspace_at(const EventStore& store, int64_t at_seq);

// sha256 over the sorted `path\0sha\0` pairs (the candidate hash of docs/event-log.md).
std::string candidate_hash(const WorkspaceFiles& files);

// A relative path that stays inside its root: not empty, not absolute, no "..", "." or empty parts.
bool is_safe_relative_path(const std::string& path);

// Writes every file from its blob into `dir` (each atomically: temp file + rename). With
// `remove_others`, regular files under `dir` that are not in `files` are deleted. Throws StoreError
// for a missing blob or an unsafe path, naming it.
void materialize_workspace(const EventStore& store, const WorkspaceFiles& files,
                           const std::filesystem::path& dir, bool remove_others = false);

}  // namespace marathon
