#include "eval/executor_usage.h"

#include <fmt/format.h>

namespace marathon::eval {

std::string ray_slot(const std::string& executor, const std::string& node) {
  return node.empty() ? executor : "ray node " + node;
}

void UsageTally::add(const Event& e) {
  if (!is<events::EvalFinished>(e)) return;
  const auto p = payload_of<events::EvalFinished>(e);
  if (p.cached || !p.executor) return;
  // A local executor's slots are told apart, and a Ray cluster's nodes (a log written before
  // nodes were recorded counts the cluster as one).
  std::string why;
  std::optional<ExecutorSpec> spec = parse_executor(p.executor->name, &why);
  bool local = spec && spec->kind == ExecutorKind::kLocal;
  std::string slot = local ? p.executor->where : ray_slot(p.executor->name, p.executor->node);
  if (slot.empty()) return;
  SlotUsage& u = slots_[slot];
  u.name = slot;
  u.evaluations += 1;
  if (p.elapsed_s > 0) u.busy_s += p.elapsed_s;
}

std::vector<SlotUsage> UsageTally::slots() const {
  std::vector<SlotUsage> out;
  for (const auto& [name, u] : slots_) out.push_back(u);
  return out;
}

json usage_json(const std::vector<SlotUsage>& slots, double wall_s) {
  json out = json::array();
  for (const SlotUsage& u : slots) {
    out.push_back({{"name", u.name},
                   {"evaluations", u.evaluations},
                   {"busy_s", u.busy_s},
                   {"busy_fraction", wall_s > 0 ? json(u.busy_s / wall_s) : json(nullptr)}});
  }
  return out;
}

std::string usage_text(const std::vector<SlotUsage>& slots, double wall_s) {
  std::string out;
  for (const SlotUsage& u : slots) {
    if (!out.empty()) out += ", ";
    std::string pct = wall_s > 0 ? fmt::format("{:.0f}%", 100 * u.busy_s / wall_s) : "-";
    out += fmt::format("{} {} ({} evals, {:.1f} s)", u.name, pct, u.evaluations, u.busy_s);
  }
  return out;
}

}  // namespace marathon::eval
