// The JSON the dashboard's API returns and the report embeds, built from a RunView. Pure apart
// from the blobs read for candidates. Every text from the log goes out as a JSON string (the page
// shows it with textContent, never as HTML).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "serve/run_phase.h"
#include "serve/run_view.h"

namespace marathon::serve {

// A row of the Runs page and of `marathon runs`: id, task, phase, best against target and
// baseline, budget used, the last event and its age (at `now_us`).
json run_row(const std::string& id, const RunView& v, RunPhase phase, int64_t now_us);

// One run for its page (needs the series), as JSON text: the row, the state as `status --json`
// shows it without the ledger (its attempts are the evaluations, its other entries the notes),
// the notes, evaluations, markers, goal history and the starter's files. Built from the texts each
// evaluation keeps, so a long run's page costs a copy, not a serialisation.
std::string run_detail(const std::string& id, RunView& v, RunPhase phase, int64_t now_us);

// What changed since `after_seq` (the page's live updates): the row, the budget and goal, the
// evaluations added or updated, markers and goal changes added, and the newest event lines.
json run_update(const std::string& id, const RunView& v, RunPhase phase, int64_t after_seq,
                int64_t now_us);

json evaluation_json(const Evaluation& e);
const std::string& evaluation_text(const Evaluation& e);  // its dump, kept in e.json_text

// Event lines {seq, at, type, text}: the newest `limit` events with seq > after (after 0: of the
// whole log), oldest first. `types` (empty: all) keeps only those types.
json event_lines(const EventStore& store, int64_t after, size_t limit,
                 const std::vector<std::string>& types = {});

// A candidate (a hash the run evaluated) for the diff view: its files, and unified diffs against
// the starter and against the best candidate before its first evaluation. nullopt when the run
// has no such candidate.
std::optional<json> candidate_json(const RunView& v, const std::string& hash);

// A file as text for the page: its bytes when they are UTF-8 without NULs and at most
// kMaxShownFileBytes, else a line saying what it is.
inline constexpr size_t kMaxShownFileBytes = 512 * 1024;
std::string shown_text(const std::string& bytes);

}  // namespace marathon::serve
