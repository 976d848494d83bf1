#include "goal/goal_verbs.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/load_state.h"

namespace marathon {

const std::vector<std::string>& goal_verb_names() {
  static const std::vector<std::string> kVerbs = {"set", "edit", "pause", "resume", "clear"};
  return kVerbs;
}

bool is_goal_verb(const std::string& verb) {
  const auto& v = goal_verb_names();
  return std::find(v.begin(), v.end(), verb) != v.end();
}

json goal_changed_payload(const std::string& verb, const std::string& text, const GoalState& goal) {
  if (!is_goal_verb(verb)) return json::object();
  json p = {{"verb", verb}};
  if (verb == "set" || verb == "edit") {
    if (text.empty()) return json::object();
    p["objective"] = text;
    p["status"] = verb == "set" ? "active" : goal.status;
    if (verb == "set") p["progress"] = "";
    return p;
  }
  p["status"] = verb == "pause" ? "paused" : verb == "resume" ? "active" : "cleared";
  if (!text.empty()) p["progress"] = text;
  return p;
}

GoalVerbResult apply_goal_verb(EventStore& store, const std::string& verb,
                               const std::string& text) {
  GoalVerbResult r;
  if (!is_goal_verb(verb)) {
    r.error = GoalVerbResult::Error::kUnknownVerb;
    r.message = fmt::format(
        "unknown goal verb \"{}\"; the verbs are set, edit, pause, resume, clear", verb);
    return r;
  }
  State s = load_state(store);
  if (!s.created) {
    r.error = GoalVerbResult::Error::kNoRun;
    r.message = fmt::format("{}: the log holds no run", store.path());
    return r;
  }
  json p = goal_changed_payload(verb, text, s.goal);
  if (p.empty()) {
    r.error = GoalVerbResult::Error::kNeedsText;
    r.message = fmt::format("goal {} needs the objective text", verb);
    return r;
  }
  r.event = store.append({ev::kGoalChanged, p});
  r.state = load_state(store);
  return r;
}

}  // namespace marathon
