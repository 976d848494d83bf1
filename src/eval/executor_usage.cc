#include "eval/executor_usage.h"

#include <fmt/format.h>

namespace marathon::eval {

void UsageTally::add(const Event& e) {
  if (e.type != ev::kEvalFinished || !e.payload.is_object()) return;
  const json& p = e.payload;
  if (p.value("cached", false)) return;
  auto x = p.find("executor");
  if (x == p.end() || !x->is_object()) return;
  std::string name = x->value("name", "");
  std::string where = x->value("where", "");
  std::string slot = name == "local" ? where : name;
  if (slot.empty()) return;
  SlotUsage& u = slots_[slot];
  u.name = slot;
  u.evaluations += 1;
  auto el = p.find("elapsed_s");
  if (el != p.end() && el->is_number() && el->get<double>() > 0) u.busy_s += el->get<double>();
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
