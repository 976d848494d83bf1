// The goal verbs: set, edit, pause, resume, clear. Each appends one goal.changed to a run's log,
// running or stopped; a running runner notices it at its next step (it re-reads the log), and
// SQLite's WAL lets this process write while the runner does. `marathon goal ...` and the
// dashboard's goal controls both call change_goal.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "control/verb_result.h"

namespace marathon::control {

enum class GoalVerb { kSet, kEdit, kPause, kResume, kClear };

inline constexpr GoalVerb kGoalVerbs[] = {GoalVerb::kSet, GoalVerb::kEdit, GoalVerb::kPause,
                                          GoalVerb::kResume, GoalVerb::kClear};

const char* to_string(GoalVerb v);
std::optional<GoalVerb> goal_verb_from_string(std::string_view name);
std::string goal_verb_names();  // "set, edit, pause, resume, clear" (for error messages)

// set and edit need `text` (the objective); for the others a non-empty `text` is a progress note.
// Throws StoreError when the run directory or its log cannot be opened (naming it).
VerbResult change_goal(const std::filesystem::path& run_dir, GoalVerb verb,
                       const std::string& text);

}  // namespace marathon::control
