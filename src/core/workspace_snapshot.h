// The workspace as recorded in the log: path -> blob sha256, from workspace.written events.
// Used by fork (rebuild at a seq), revert (back to a candidate) and resume (restore the files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "core/confined_path.h"  // is_safe_relative_path
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

// Writes every file from its blob into `dir` through ConfinedDir (core/confined_dir.h), each
// atomically (temp file + rename), following no link: a link, FIFO or socket standing where a file
// or its folder goes is replaced, never written through. With `remove_others` the workspace is
// made exactly the log's: every entry under `dir` that is not a folder and not in `files` (links
// included, removed as links) is deleted first, and so is a folder standing where a file goes.
// Throws StoreError for a missing blob, a path that is not in normal form
// (is_safe_relative_path, core/confined_path.h) or a file that cannot be written, naming it.
void materialize_workspace(const EventStore& store, const WorkspaceFiles& files,
                           const std::filesystem::path& dir, bool remove_others = false);

}  // namespace marathon
