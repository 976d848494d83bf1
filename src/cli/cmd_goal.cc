// marathon goal set|edit|pause|resume|clear RUN_DIR [TEXT]: appends goal.changed to a run's log,
// running or stopped (control/goal_verb.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.h"
#include "cli/usage.h"
#include "control/goal_verb.h"

namespace marathon::cli {

namespace {

int do_goal(control::GoalVerb verb, const std::string& run_dir, const std::string& text) {
  control::VerbResult r = control::change_goal(run_dir, verb, text);
  if (r.status != control::VerbStatus::kDone) {
    spdlog::error("{}", r.message);
    return control::exit_code_of(r.status);
  }
  const State& s = r.state;
  std::printf("goal %s: %s\n  objective: %s\n", control::to_string(verb),
              to_string(s.goal.status).c_str(), s.goal.objective.c_str());
  if (s.done) {
    std::printf("  note: the run has finished (%s); the change is recorded only\n",
                s.finish_reason.c_str());
  } else if (s.paused && s.goal.status == GoalStatus::kActive) {
    std::printf("  the run is stopped: `marathon resume %s` carries on\n", run_dir.c_str());
  }
  return 0;
}

const char* goal_verb_help(control::GoalVerb verb) {
  switch (verb) {
    case control::GoalVerb::kSet:
      return "Give the run a new objective (TEXT) and make the goal active again; the runner "
             "reads it at its next step";
    case control::GoalVerb::kEdit:
      return "Replace the objective with TEXT, keeping the goal's status (active, paused)";
    case control::GoalVerb::kPause:
      return "Pause the goal: the run stops at its next step (TEXT: why, recorded)";
    case control::GoalVerb::kResume:
      return "Make a paused goal active again (then `marathon resume RUN_DIR` carries on)";
    case control::GoalVerb::kClear:
      return "Clear the goal: the run finishes at its next step (goal_cleared)";
  }
  return "";
}

}  // namespace

void register_goal(CLI::App& app) {
  CLI::App* goal = app.add_subcommand("goal", "Change the goal of a running or stopped run");
  goal->require_subcommand(1);
  for (control::GoalVerb verb : control::kGoalVerbs) {
    auto run_dir = std::make_shared<std::string>();
    auto text = std::make_shared<std::string>();
    const char* name = control::to_string(verb);
    CLI::App* sub = goal->add_subcommand(name, goal_verb_help(verb));
    sub->add_option("RUN_DIR", *run_dir, "Run directory")
        ->required()
        ->check(existing_run_dir_check());
    sub->add_option("TEXT", *text, "Objective (set, edit) or a note (pause, resume, clear)");
    sub->callback([verb, run_dir, text] { exit_code = do_goal(verb, *run_dir, *text); });
  }
}

}  // namespace marathon::cli
