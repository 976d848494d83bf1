// marathon goal set|edit|pause|resume|clear RUN_DIR [TEXT]: appends goal.changed to a run's log,
// running or stopped. A running runner notices it at its next step (it re-reads the log); SQLite's
// WAL lets this process write while the runner does.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.h"
#include "core/event_store.h"
#include "core/events.h"
#include "core/fold.h"
#include "core/run_dir.h"

namespace marathon::cli {

namespace {

int do_goal(const std::string& verb, const std::string& run_dir, const std::string& text) {
  RunDir dir = existing_run_dir(run_dir);
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kOpen);
  State s = fold(store->read());
  if (!s.created) {
    spdlog::error("{}: the log holds no run", store->path());
    return 1;
  }
  events::GoalChanged p;
  p.verb = goal_verb_from_string(verb);
  if (p.verb == GoalVerb::kSet || p.verb == GoalVerb::kEdit) {
    if (text.empty()) {
      spdlog::error("goal {} needs the objective text: marathon goal {} RUN_DIR \"TEXT\"", verb,
                    verb);
      return 2;
    }
    p.objective = text;
    p.status = p.verb == GoalVerb::kSet ? GoalStatus::kActive : s.goal.status;
    if (p.verb == GoalVerb::kSet) p.progress = "";
  } else {
    p.status = status_after(p.verb);
    if (!text.empty()) p.progress = text;
  }
  store->append(make_event(p));
  s = fold(store->read());
  std::printf("goal %s: %s\n  objective: %s\n", verb.c_str(), to_string(s.goal.status).c_str(),
              s.goal.objective.c_str());
  if (s.done) {
    std::printf("  note: the run has finished (%s); the change is recorded only\n",
                s.finish_reason.c_str());
  } else if (s.paused && s.goal.status == GoalStatus::kActive) {
    std::printf("  the run is stopped: `marathon resume %s` carries on\n", run_dir.c_str());
  }
  return 0;
}

}  // namespace

void register_goal(CLI::App& app) {
  CLI::App* goal = app.add_subcommand("goal", "Change the goal of a running or stopped run");
  goal->require_subcommand(1);
  for (const char* verb : {"set", "edit", "pause", "resume", "clear"}) {
    auto run_dir = std::make_shared<std::string>();
    auto text = std::make_shared<std::string>();
    CLI::App* sub = goal->add_subcommand(verb, fmt::format("goal {}", verb));
    sub->add_option("RUN_DIR", *run_dir, "Run directory")->required();
    sub->add_option("TEXT", *text, "Objective (set, edit) or a note (pause, resume, clear)");
    std::string v = verb;
    sub->callback([v, run_dir, text] { exit_code = do_goal(v, *run_dir, *text); });
  }
}

}  // namespace marathon::cli
