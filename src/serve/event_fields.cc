#include "serve/event_fields.h"

#include <fmt/format.h>

#include "core/eval_result.h"

namespace marathon::serve {

namespace {

// The payload of `e` as a P, or nullopt when it is not one or does not read as one.
template <class P>
std::optional<P> read_as(const Event& e) {
  if (!is<P>(e)) return std::nullopt;
  try {
    return e.payload.get<P>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

const char* to_string(EvalKind k) {
  switch (k) {
    case EvalKind::kOk:
      return "ok";
    case EvalKind::kIncorrect:
      return "incorrect";
    case EvalKind::kViolating:
      return "violating";
    case EvalKind::kFailed:
      return "failed";
  }
  return "?";
}

const char* to_string(MarkerKind k) {
  switch (k) {
    case MarkerKind::kCompaction:
      return "compaction";
    case MarkerKind::kGoal:
      return "goal";
    case MarkerKind::kPause:
      return "pause";
    case MarkerKind::kResume:
      return "resume";
    case MarkerKind::kFinish:
      return "finish";
  }
  return "?";
}

std::optional<EvalFields> eval_fields(const Event& e) {
  auto p = read_as<events::EvalFinished>(e);
  if (!p) return std::nullopt;
  EvalResult result;
  bool readable = true;
  try {
    result = read_eval_result(p->result);
  } catch (const std::exception&) {
    readable = false;  // a result field of the wrong type: shown as a failed evaluation
  }
  EvalFields f;
  f.candidate = p->candidate;
  f.status = p->status;
  f.strategy = p->strategy;
  f.cached = p->cached;
  f.correct = result.correct;
  f.score = result.score;
  f.violating = result.has_violations();
  f.kind = f.status != EvalStatus::kOk || !readable ? EvalKind::kFailed
           : !f.correct                             ? EvalKind::kIncorrect
           : f.violating                            ? EvalKind::kViolating
           : f.score                                ? EvalKind::kOk
                                                    : EvalKind::kFailed;
  return f;
}

std::optional<MarkerFields> marker_fields(const Event& e) {
  if (auto p = read_as<events::CompactionInstalled>(e)) {
    if (p->outcome != CompactionOutcome::kCompacted) return std::nullopt;
    return MarkerFields{MarkerKind::kCompaction,
                        fmt::format("compaction ({}, {})", p->scope.trigger, p->source)};
  }
  if (auto p = read_as<events::GoalChanged>(e)) {
    return MarkerFields{MarkerKind::kGoal, "goal " + to_string(p->verb)};
  }
  if (auto p = read_as<events::RunPaused>(e)) {
    return MarkerFields{MarkerKind::kPause, "paused: " + p->reason};
  }
  if (auto p = read_as<events::RunResumed>(e)) {
    std::string text = p->host ? "resumed on " + *p->host : "resumed";
    if (p->config.is_object() && p->config.contains("task_dir")) {
      text += ", the task at " + p->config.value("task_dir", "");
    }
    return MarkerFields{MarkerKind::kResume, text};
  }
  if (auto p = read_as<events::RunFinished>(e)) {
    return MarkerFields{MarkerKind::kFinish, "finished: " + p->reason};
  }
  return std::nullopt;
}

std::optional<GoalFields> goal_fields(const Event& e) {
  auto p = read_as<events::GoalChanged>(e);
  if (!p) return std::nullopt;
  return GoalFields{to_string(p->verb), p->objective.value_or(""),
                    p->status ? to_string(*p->status) : std::string(), p->progress.value_or("")};
}

std::optional<ToolFields> tool_fields(const Event& e) {
  if (auto p = read_as<events::ToolStarted>(e)) return ToolFields{p->name, false, ""};
  if (auto p = read_as<events::ToolFinished>(e)) return ToolFields{p->name, p->ok, p->output};
  return std::nullopt;
}

bool is_creation_event(const Event& e) {
  if (is<events::RunCreated>(e)) return true;
  auto p = read_as<events::WorkspaceWritten>(e);
  return p && p->source == events::WorkspaceWritten::kStarter;
}

}  // namespace marathon::serve
