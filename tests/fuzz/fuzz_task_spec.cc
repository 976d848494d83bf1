// Fuzz target: task.toml text through parse_task (goal/task_spec.cc), as `marathon run` reads a
// task folder (the starter-file check is skipped: no folder). The seeds are the repository's tasks.
// Contracts held (goal/task_spec.h, docs/tasks.md): a bad file is a TaskError and nothing else; an
// accepted spec has every documented property, and what the runtime then does with it (the
// canonical JSON of the result cache key, the evaluator argv, the budget's integer counts, the
// evaluator's deadline) works for every accepted value.
#include <cmath>

#include "fuzz_check.h"
#include "goal/task_spec.h"

namespace {

using marathon::json;
using marathon::fuzz::expect;

bool contained(const std::string& p) {
  if (p.empty() || p[0] == '/') return false;
  for (const auto& part : std::filesystem::path(p)) {
    if (part == "..") return false;
  }
  return true;
}

bool finite_numbers(const json& j) {
  if (j.is_number_float()) return std::isfinite(j.get<double>());
  if (j.is_structured()) {
    for (const json& v : j) {
      if (!finite_numbers(v)) return false;
    }
  }
  return true;
}

void check_spec(const marathon::TaskSpec& spec) {
  const std::string& n = spec.name;  // [a-z0-9][a-z0-9._-]*
  expect(!n.empty() &&
             n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") == std::string::npos &&
             n.find_first_of("._-") != 0,
         "accepted name \"" + n + "\"");
  expect(spec.description.find_first_not_of(" \t\r\n") != std::string::npos,
         "accepted a blank description");
  expect(contained(spec.starter_dir), "accepted starter_dir \"" + spec.starter_dir + "\"");
  expect(!spec.starter.empty() && !spec.editable.empty(), "accepted empty starter/editable");
  for (const auto& s : spec.starter) expect(contained(s), "accepted starter \"" + s + "\"");
  const std::string direction = marathon::to_string(spec.goal.direction);
  expect(direction == "max" || direction == "min", "accepted direction \"" + direction + "\"");
  expect(spec.evaluator.argv.empty() != spec.evaluator.shell.empty(),
         "the evaluator command must be exactly one of argv and shell");
  expect(!spec.evaluator.version.empty(), "accepted an empty evaluator version");
  // The evaluator's deadline is a clock duration (sandbox/launcher.cc): it must convert.
  expect(spec.evaluator.timeout_s > 0 && spec.evaluator.timeout_s <= 1e9,
         "accepted timeout_s " + std::to_string(spec.evaluator.timeout_s));
  expect(!spec.goal.target || std::isfinite(*spec.goal.target), "accepted a non-finite target");
  // The budget's counts are read as int64 (loop/run_setup.cc) and every number as a finite one.
  for (const auto& [k, v] : spec.limits.items()) {
    expect(v.is_number() && v.get<double>() >= 0, "accepted limits." + k + " = " + v.dump());
  }
  expect(finite_numbers(spec.limits) && finite_numbers(spec.prices),
         "accepted a non-finite limit or price");
  for (const char* k : {"max_tool_calls", "max_tokens"}) {
    if (!spec.limits.contains(k)) continue;
    const double v = spec.limits[k].get<double>();
    expect(v == std::floor(v) && v <= 9007199254740992.0,  // 2^53: whole doubles up to here
           std::string("limits.") + k + " is not a whole number int64 holds: " + std::to_string(v));
  }
  for (const auto& [model, p] : spec.prices.items()) {
    expect(p.size() == 2 && p["prompt"].get<double>() >= 0 && p["completion"].get<double>() >= 0,
           "accepted prices." + model + " = " + p.dump());
  }
  (void)marathon::canonical_json(spec);
  auto argv = marathon::evaluator_argv(spec, "python3", "/candidate");
  expect(!argv.empty(), "an accepted evaluator has no argv");
  (void)marathon::is_editable(spec, "kernel.py");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(marathon::fuzz::bytes(data, size));
  marathon::TaskSpec spec;
  try {
    spec = marathon::parse_task(text, "task.toml", {});
  } catch (const marathon::TaskError& e) {
    expect(std::string(e.what()).rfind("task.toml", 0) == 0, "a TaskError not naming the file");
    return 0;
  }
  check_spec(spec);
  return 0;
}
