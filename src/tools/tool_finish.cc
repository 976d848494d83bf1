#include "tools/tool_finish.h"

#include <fmt/format.h>

namespace marathon {

std::string finish_refusal(const State* state) {
  if (state == nullptr || state->best_score) return "";
  const json& task = state->task;
  if (task.is_object() && task.contains("goal") && task["goal"].is_object()) {
    auto lifted = task["goal"].find("finish_needs_correct_evaluation");
    if (lifted != task["goal"].end() && lifted->is_boolean() && !lifted->get<bool>()) return "";
  }
  return fmt::format(
      "finish refused: no evaluation has been correct yet ({} evaluation(s) so far). Evaluate a "
      "candidate that passes the evaluator's checks first (the starter files count). The runtime "
      "stops the run itself when a budget is used up.",
      state->evaluations);
}

namespace {

std::string short_number(double v) { return fmt::format("{:.4g}", v); }

class FinishTool : public Tool {
 public:
  std::string name() const override { return "finish"; }
  std::string description() const override {
    return "End the run. Give a summary: the best candidate, its score, what worked and what did "
           "not. Call it only when you are done; the run stops for good.";
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties", {{"summary", {{"type", "string"}, {"minLength", 1}}}}},
            {"required", {"summary"}},
            {"additionalProperties", false}};
  }
  bool idempotent() const override { return true; }

  ToolResult run(const json& args, ToolContext& ctx) override {
    ToolResult r;
    if (std::string refusal = finish_refusal(ctx.state); !refusal.empty()) {
      r.ok = false;
      r.output = refusal;
      return r;
    }
    std::string summary = args.at("summary").get<std::string>();
    // The top candidates are re-measured before the run ends (each logged as it is done), so the
    // best this reports is the confirmed one.
    if (ctx.confirm_final) ctx.confirm_final();
    r.finishes_run = true;
    r.events.push_back(make_event(events::RunFinished{"finish", summary}));
    std::string best = "no correct evaluation";
    if (ctx.state && ctx.state->best_score) {
      const State& s = *ctx.state;
      std::optional<Figure> f = best_figure(s);
      best = fmt::format("best score {} (candidate {})",
                         f ? figure_text(*f, short_number) : short_number(*s.best_score),
                         s.best_candidate.substr(0, 12));
      if (std::string ties = ties_text(s, short_number); !ties.empty()) best += "; " + ties;
      if (std::string b = baseline_text(s, short_number); !b.empty()) best += "; " + b;
    }
    r.output = fmt::format("run finished; {}", best);
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_finish_tool() { return std::make_unique<FinishTool>(); }

}  // namespace marathon
