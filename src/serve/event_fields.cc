#include "serve/event_fields.h"

#include <fmt/format.h>

namespace marathon::serve {

namespace {

std::string str(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool boolean(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::optional<double> number(const json& j, const char* k) {
  auto it = j.find(k);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

const json& object(const json& j, const char* k) {
  static const json kEmpty = json::object();
  auto it = j.find(k);
  return it != j.end() && it->is_object() ? *it : kEmpty;
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
  if (e.type != events::EvalFinished::kType) return std::nullopt;
  const json& p = e.payload;
  const json& result = object(p, "result");
  EvalFields f;
  f.candidate = str(p, "candidate");
  f.status = p.contains("status") ? str(p, "status") : "ok";
  f.strategy = str(p, "strategy");
  f.cached = boolean(p, "cached");
  f.correct = boolean(result, "correct");
  f.score = number(result, "score");
  auto v = result.find("violations");
  f.violating =
      v != result.end() && !v->is_null() && !((v->is_array() || v->is_object()) && v->empty());
  f.kind = f.status != "ok" ? EvalKind::kFailed
           : !f.correct     ? EvalKind::kIncorrect
           : f.violating    ? EvalKind::kViolating
           : f.score        ? EvalKind::kOk
                            : EvalKind::kFailed;
  return f;
}

std::optional<MarkerFields> marker_fields(const Event& e) {
  const json& p = e.payload;
  if (e.type == events::CompactionInstalled::kType) {
    if (str(p, "outcome") != "compacted") return std::nullopt;
    return MarkerFields{MarkerKind::kCompaction,
                        fmt::format("compaction ({}, {})", str(p, "trigger"), str(p, "source"))};
  }
  if (e.type == events::GoalChanged::kType) {
    return MarkerFields{MarkerKind::kGoal, "goal " + str(p, "verb")};
  }
  if (e.type == events::RunPaused::kType)
    return MarkerFields{MarkerKind::kPause, "paused: " + str(p, "reason")};
  if (e.type == events::RunResumed::kType) return MarkerFields{MarkerKind::kResume, "resumed"};
  if (e.type == events::RunFinished::kType) {
    return MarkerFields{MarkerKind::kFinish, "finished: " + str(p, "reason")};
  }
  return std::nullopt;
}

std::optional<GoalFields> goal_fields(const Event& e) {
  if (e.type != events::GoalChanged::kType) return std::nullopt;
  const json& p = e.payload;
  return GoalFields{str(p, "verb"), str(p, "objective"), str(p, "status"), str(p, "progress")};
}

std::optional<ToolFields> tool_fields(const Event& e) {
  if (e.type != events::ToolStarted::kType && e.type != events::ToolFinished::kType) return std::nullopt;
  const json& p = e.payload;
  return ToolFields{str(p, "name"), boolean(p, "ok"), str(p, "output")};
}

bool is_creation_event(const Event& e) {
  return e.type == events::RunCreated::kType ||
         (e.type == events::WorkspaceWritten::kType && str(e.payload, "source") == "starter");
}

}  // namespace marathon::serve
