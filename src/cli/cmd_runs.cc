// marathon runs [DIR] [--json]: every run in a folder, the rows of the dashboard's Runs page.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/terminal_text.h"
#include "serve/run_views.h"

namespace marathon::cli {
namespace {

struct RunsOptions {
  std::string dir = "runs";
  bool json = false;
};

std::string num(const json& v) {
  return v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : std::string("-");
}

std::string age(double s) {
  if (s < 120) return fmt::format("{:.0f}s", s);
  if (s < 7200) return fmt::format("{:.0f}m", s / 60);
  if (s < 172800) return fmt::format("{:.1f}h", s / 3600);
  return fmt::format("{:.1f}d", s / 86400);
}

std::string used_of(const json& gauge, const char* fmt_used) {
  std::string used = fmt::format(fmt::runtime(fmt_used), gauge.value("used", 0.0));
  if (!gauge["limit"].is_number()) return used;
  return fmt::format("{} ({:.0f}%)", used,
                     100 * gauge.value("used", 0.0) / gauge["limit"].get<double>());
}

int do_runs(const RunsOptions& o) {
  json rows;
  try {
    serve::RunViews views{serve::RunCatalog(o.dir)};
    int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    rows = views.rows(now);
  } catch (const std::invalid_argument& e) {
    spdlog::error("runs: {}", e.what());
    return 2;
  }
  if (o.json) {
    std::cout << rows.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (rows.empty()) {
    std::printf("no runs in %s\n", terminal_safe(o.dir).c_str());
    return 0;
  }
  std::printf("%-28s %-12s %-9s %-17s %5s %-16s %-10s %-9s %s\n", "RUN", "TASK", "STATE",
              "BEST / TARGET", "EVALS", "TOOL CALLS", "WALL", "COST", "LAST EVENT");
  for (const json& r : rows) {
    if (r.contains("error")) {
      std::printf("%-28s %-12s %-9s %s\n", terminal_safe(r.value("id", "")).c_str(), "",
                  "unreadable", terminal_safe(r.value("error", "")).c_str());
      continue;
    }
    const json& b = r["budget"];
    std::string best = num(r["best_score"]) + " / " + num(r["goal"]["target"]);
    std::string last =
        r["last_event"].value("type", "") + " " + age(r["last_event"].value("age_s", 0.0)) + " ago";
    // A replay spent nothing itself: its cost gauge counts the original's spend again.
    std::string cost =
        b.value("replayed", false)
            ? fmt::format("${:.2f} (replay)", b["spent_by_this_run"].value("cost_usd", 0.0))
            : used_of(b["cost_usd"], "${:.2f}");
    std::printf(
        "%-28s %-12s %-9s %-17s %5lld %-16s %-10s %-9s %s\n",
        terminal_safe(r.value("id", "")).c_str(), terminal_safe(r.value("task", "")).c_str(),
        terminal_safe(r.value("phase", "")).c_str(), best.c_str(),
        static_cast<long long>(r.value("evaluations", int64_t{0})),
        used_of(b["tool_calls"], "{:.0f}").c_str(), age(b["wall_s"].value("used", 0.0)).c_str(),
        cost.c_str(), terminal_safe(last).c_str());
  }
  return 0;
}

}  // namespace

void register_runs(CLI::App& app) {
  auto o = std::make_shared<RunsOptions>();
  auto* cmd = app.add_subcommand("runs", "List the runs in a folder (the dashboard's Runs page)");
  cmd->add_option("DIR", o->dir, "Folder holding the run directories (default runs)");
  cmd->add_flag("--json", o->json, "Print the rows as JSON");
  cmd->callback([o] { exit_code = do_runs(*o); });
}

}  // namespace marathon::cli
