// marathon report RUN_DIR [-o FILE]: the run's self-contained report (serve/report.h), by default
// RUN_DIR/report.html.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "cli/usage.h"
#include "core/event_store.h"
#include "serve/report.h"

namespace marathon::cli {
namespace {

struct ReportOptions {
  std::string run_dir;
  std::string out;
};

int do_report(ReportOptions o) {
  if (o.out.empty()) o.out = (std::filesystem::path(o.run_dir) / "report.html").string();
  std::string html;
  try {
    html = serve::render_report(o.run_dir);
  } catch (const StoreError& e) {
    spdlog::error("report: {}", e.what());
    return 1;
  }
  std::ofstream file(o.out, std::ios::binary | std::ios::trunc);
  file << html;
  file.close();
  if (!file) {
    spdlog::error("report: cannot write {}", o.out);
    return 1;
  }
  std::printf("marathon: report of %s written to %s (%zu bytes; opens with no server)\n",
              o.run_dir.c_str(), o.out.c_str(), html.size());
  return 0;
}

}  // namespace

void register_report(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand("report", "Write a run's self-contained HTML report");
  cmd->add_option("RUN_DIR", o->run_dir, "The run directory (holds events.db)")
      ->required()
      ->check(existing_run_dir_check());
  cmd->add_option("-o,--output", o->out, "The HTML file to write (default: RUN_DIR/report.html)");
  cmd->callback([o] { exit_code = do_report(*o); });
}

}  // namespace marathon::cli
