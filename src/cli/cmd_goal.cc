// marathon goal set|edit|pause|resume|clear RUN_DIR [TEXT]: appends goal.changed to a run's log,
// running or stopped. A running runner notices it at its next step (it re-reads the log); SQLite's
// WAL lets this process write while the runner does.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.h"
#include "core/event_store.h"
#include "core/run_dir.h"
#include "goal/goal_verbs.h"

namespace marathon::cli {

namespace {

int do_goal(const std::string& verb, const std::string& run_dir, const std::string& text) {
  RunDir dir = existing_run_dir(run_dir);
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kOpen);
  GoalVerbResult r = apply_goal_verb(*store, verb, text);
  if (r.error == GoalVerbResult::Error::kNeedsText) {
    spdlog::error("{}: marathon goal {} RUN_DIR \"TEXT\"", r.message, verb);
    return 2;
  }
  if (r.error != GoalVerbResult::Error::kNone) {
    spdlog::error("{}", r.message);
    return 1;
  }
  const State& s = r.state;
  std::printf("goal %s: %s\n  objective: %s\n", verb.c_str(), s.goal.status.c_str(),
              s.goal.objective.c_str());
  if (s.done) {
    std::printf("  note: the run has finished (%s); the change is recorded only\n",
                s.finish_reason.c_str());
  } else if (s.paused && s.goal.status == "active") {
    std::printf("  the run is stopped: `marathon resume %s` carries on\n", run_dir.c_str());
  }
  return 0;
}

}  // namespace

void register_goal(CLI::App& app) {
  CLI::App* goal = app.add_subcommand("goal", "Change the goal of a running or stopped run");
  goal->require_subcommand(1);
  for (const std::string& verb : goal_verb_names()) {
    auto run_dir = std::make_shared<std::string>();
    auto text = std::make_shared<std::string>();
    CLI::App* sub = goal->add_subcommand(verb, fmt::format("goal {}", verb));
    sub->add_option("RUN_DIR", *run_dir, "Run directory")->required();
    sub->add_option("TEXT", *text, "Objective (set, edit) or a note (pause, resume, clear)");
    sub->callback([verb, run_dir, text] { exit_code = do_goal(verb, *run_dir, *text); });
  }
}

}  // namespace marathon::cli
