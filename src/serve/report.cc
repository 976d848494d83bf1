#include "serve/report.h"

#include <chrono>

#include "core/log_export.h"
#include "serve/page.h"
#include "serve/run_json.h"

namespace marathon::serve {

json report_data(const std::string& id, RunView& v, RunPhase phase, int64_t now_us) {
  v.ensure_series();
  json best = nullptr;
  if (!v.state().best_candidate.empty()) {
    if (auto c = candidate_json(v, v.state().best_candidate)) best = std::move(*c);
  }
  return {{"mode", "report"},
          {"generated_at", format_rfc3339_us(now_us)},
          {"run", json::parse(run_detail(id, v, phase, now_us))},
          {"events", event_lines(v.store(), 0, kReportEvents)},
          {"best", std::move(best)}};
}

std::string render_report(const std::filesystem::path& run_dir) {
  RunView v(run_dir);
  int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  std::filesystem::path abs = std::filesystem::absolute(run_dir).lexically_normal();
  std::string id =
      abs.filename().empty() ? abs.parent_path().filename().string() : abs.filename().string();
  json data = report_data(id, v, phase_of(v.state(), runner_holds_lock(run_dir)), now_us);
  return page_html(PageMode::kReport, data);
}

}  // namespace marathon::serve
