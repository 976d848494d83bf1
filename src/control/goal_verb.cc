#include "control/goal_verb.h"

#include <fmt/format.h>

#include "core/event_store.h"
#include "core/fold.h"
#include "core/run_dir.h"

namespace marathon::control {

int exit_code_of(VerbStatus s) {
  switch (s) {
    case VerbStatus::kDone:
      return 0;
    case VerbStatus::kBadInput:
    case VerbStatus::kWrongState:
      return 2;
    case VerbStatus::kNoRun:
      return 1;
  }
  return 1;
}

const char* to_string(GoalVerb v) {
  switch (v) {
    case GoalVerb::kSet:
      return "set";
    case GoalVerb::kEdit:
      return "edit";
    case GoalVerb::kPause:
      return "pause";
    case GoalVerb::kResume:
      return "resume";
    case GoalVerb::kClear:
      return "clear";
  }
  return "?";
}

std::optional<GoalVerb> goal_verb_from_string(std::string_view name) {
  for (GoalVerb v : kGoalVerbs) {
    if (name == to_string(v)) return v;
  }
  return std::nullopt;
}

std::string goal_verb_names() {
  std::string out;
  for (GoalVerb v : kGoalVerbs) out += (out.empty() ? "" : ", ") + std::string(to_string(v));
  return out;
}

VerbResult change_goal(const std::filesystem::path& run_dir, GoalVerb verb,
                       const std::string& text) {
  RunDir dir = existing_run_dir(run_dir);
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kOpen);
  VerbResult r;
  r.state = fold(store->read());
  if (!r.state.created) {
    r.status = VerbStatus::kNoRun;
    r.message = fmt::format("{}: the log holds no run", store->path());
    return r;
  }
  const std::string name = to_string(verb);
  events::GoalChanged p;
  p.verb = marathon::goal_verb_from_string(name);  // core's verb of the same name
  if (verb == GoalVerb::kSet || verb == GoalVerb::kEdit) {
    if (text.empty()) {
      r.status = VerbStatus::kBadInput;
      r.message = fmt::format("goal {} needs the objective text: marathon goal {} RUN_DIR \"TEXT\"",
                              name, name);
      return r;
    }
    p.objective = text;
    p.status = verb == GoalVerb::kSet ? GoalStatus::kActive : r.state.goal.status;
    if (verb == GoalVerb::kSet) p.progress = "";
  } else {
    p.status = status_after(p.verb);
    if (!text.empty()) p.progress = text;
  }
  Event e = store->append(make_event(p));
  r.seq = e.seq;
  r.state = fold(store->read());
  return r;
}

}  // namespace marathon::control
