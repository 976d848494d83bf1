// `marathon report RUN_DIR -o report.html`: one self-contained file with the run's page (the
// charts, the attempts, the ledger, the goal's history, the figures), the best candidate's source
// and its diff from the starter, and the newest events; it opens from disk with no server and no
// network (page.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "serve/run_phase.h"
#include "serve/run_view.h"

namespace marathon::serve {

inline constexpr size_t kReportEvents = 300;  // the newest events the report lists

// The report's data: {mode: "report", generated_at, run (run_json.h's run_detail), events, best}.
json report_data(const std::string& id, RunView& v, RunPhase phase, int64_t now_us);

// The report of the run in `run_dir`, as HTML. Throws StoreError (the log cannot be read).
std::string render_report(const std::filesystem::path& run_dir);

}  // namespace marathon::serve
