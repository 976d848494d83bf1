// What the dashboard reads of each event, in one place: each accessor reads the payload through its
// typed struct (core/events.h) and the evaluator's result through core/eval_result.h. The events
// given here have been through fold (which rejects a malformed known type), but an accessor still
// treats a payload that does not read as its type as absent rather than trusting the log.
#pragma once

#include <optional>
#include <string>

#include "core/events.h"

namespace marathon::serve {

// How an evaluation ended, as the charts mark it. kOk is a result that counts for the best score
// (fold's rule: status ok, correct, no violations, a number for the score).
enum class EvalKind { kOk, kIncorrect, kViolating, kFailed };
const char* to_string(EvalKind k);

struct EvalFields {  // eval.finished
  std::string candidate;
  EvalStatus status = EvalStatus::kOk;
  std::string strategy;
  bool cached = false;
  bool correct = false;
  bool violating = false;
  std::optional<double> score;
  EvalKind kind = EvalKind::kFailed;
};
std::optional<EvalFields> eval_fields(const Event& e);

// The vertical markers of the charts: a compaction that was installed, a goal change, a pause, a
// resume, the finish.
enum class MarkerKind { kCompaction, kGoal, kPause, kResume, kFinish };
const char* to_string(MarkerKind k);
struct MarkerFields {
  MarkerKind kind;
  std::string label;
};
std::optional<MarkerFields> marker_fields(const Event& e);

struct GoalFields {  // goal.changed, as shown: the verb's name ("created" for run.created)
  std::string verb, objective, status, progress;
};
std::optional<GoalFields> goal_fields(const Event& e);

struct ToolFields {  // tool.started (name) and tool.finished (name, ok, output when read)
  std::string name;
  bool ok = false;
  std::string output;
};
std::optional<ToolFields> tool_fields(const Event& e);

// The events a run is created with (run.created and the workspace.written of each starter file,
// marked source WorkspaceWritten::kStarter): the workspace after them is the starter.
bool is_creation_event(const Event& e);

inline constexpr const char* kProfileTool = "profile";

}  // namespace marathon::serve
