#include "context/goal_block.h"

#include <fmt/format.h>

#include <cmath>

namespace marathon::context {

std::string short_hash(const std::string& hash) { return hash.substr(0, 12); }

std::string fmt_number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  std::string s = fmt::format("{:.4f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

namespace {

std::string budget_line(const State& s) {
  const BudgetLimits& l = s.limits;
  const BudgetUsed& u = s.used;
  std::string out = fmt::format("Budget: tool calls {} used", u.tool_calls);
  if (l.max_tool_calls > 0) {
    out += fmt::format(" of {} ({} left)", l.max_tool_calls,
                       std::max<int64_t>(0, l.max_tool_calls - u.tool_calls));
  }
  out += fmt::format("; wall {}h", fmt_number(u.wall_s / 3600.0));
  if (l.max_wall_s > 0) out += fmt::format(" of {}h", fmt_number(l.max_wall_s / 3600.0));
  out += fmt::format("; tokens {}", u.prompt_tokens + u.completion_tokens);
  if (l.max_tokens > 0) out += fmt::format(" of {}", l.max_tokens);
  if (l.max_cost_usd > 0 || u.cost_usd > 0) {
    out += fmt::format("; cost ${}", fmt_number(u.cost_usd));
    if (l.max_cost_usd > 0) out += fmt::format(" of ${}", fmt_number(l.max_cost_usd));
  }
  if (l.max_gpu_s > 0 || u.gpu_s > 0) {
    out += fmt::format("; GPU {}s", fmt_number(u.gpu_s));
    if (l.max_gpu_s > 0) out += fmt::format(" of {}s", fmt_number(l.max_gpu_s));
  }
  return out;
}

}  // namespace

std::string render_goal_block(const State& s) {
  const GoalState& g = s.goal;
  std::string out = kGoalBlockHeading;
  out += "\nObjective: " + (g.objective.empty() ? std::string("(none set)") : g.objective);
  out += "\nMetric: " + (g.metric.empty() ? std::string("score") : g.metric) + " (" +
         (g.direction == Direction::kMin ? "lower is better" : "higher is better") + ")";
  if (g.target) out += ", target " + fmt_number(*g.target);
  out += "\nBaseline: " + (s.baseline_score ? fmt_number(*s.baseline_score) : "not measured yet");
  if (s.best_score) {
    std::optional<Figure> f = best_figure(s);
    out += "\nBest so far: " + (f ? figure_text(*f, fmt_number) : fmt_number(*s.best_score));
    if (!s.best_candidate.empty()) out += " (candidate " + short_hash(s.best_candidate) + ")";
    if (g.target) {
      out += target_met(g.direction, s.best_score, g.target) ? ", target reached"
                                                             : ", target not reached";
    }
    if (std::string ties = ties_text(s, fmt_number); !ties.empty()) {
      out += "\nA tie, not a win: the best is " + ties;
    }
    if (std::string b = baseline_text(s, fmt_number); !b.empty())
      out += "\nAgainst the baseline: " + b;
  } else {
    out += "\nBest so far: no correct result yet";
  }
  for (const std::string& cand : s.confirm.pending) {
    if (std::optional<Figure> f = figure_of(s, cand)) {
      out +=
          "\nBeing re-measured: candidate " + short_hash(cand) + " " + figure_text(*f, fmt_number);
    }
  }
  if (s.confirm.settings.n > 0) {
    out += fmt::format(
        "\nConfirmation: a candidate whose first draw would be the best is re-measured {} times "
        "on fresh inputs; its figure is the median of those, and one within the noise of the "
        "best is a tie",
        s.confirm.settings.n);
  }
  out += "\n" + budget_line(s);
  out += fmt::format("\nEvaluations: {} ({} since the last improvement)", s.evaluations,
                     s.evals_since_improvement);
  out += "\nGoal status: " + to_string(g.status);
  if (!g.progress.empty()) out += " (" + g.progress + ")";
  if (g.turns_without_progress > 0) {
    out += fmt::format("; {} turns without progress", g.turns_without_progress);
  }
  return out;
}

}  // namespace marathon::context
