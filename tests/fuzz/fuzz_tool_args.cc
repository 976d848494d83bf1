// Fuzz target: the arguments of a model's tool call, checked the way the loop checks them before a
// tool runs (loop/runner.cc effective_tool_error, tools/tool_registry.cc): parse_tool_arguments,
// then validate_schema (tools/json_schema.cc) against the tool's own schema. The first input byte
// picks one of the run's tools, or (0xff) reads the rest as [schema, value] to validate any value
// against any schema; the rest is the arguments text. The seeds are calls of every tool.
// Contracts held (tools/tool_registry.h, tools/json_schema.h): neither throws for any text; a
// refusal always says why; each schema problem is a non-empty "where: what" line starting at
// "arguments"; a value the tool's schema accepts has every required property. Arguments nested past
// the reader's bound (200,000 levels in a seed) or holding 1e400 are refused with the reason.
#include "core/json_reader.h"
#include "fuzz_check.h"
#include "tools/json_schema.h"
#include "tools/tool_evaluate.h"
#include "tools/tool_finish.h"
#include "tools/tool_note.h"
#include "tools/tool_profile.h"
#include "tools/tool_recall.h"
#include "tools/tool_registry.h"
#include "tools/tool_revert.h"
#include "tools/workspace_tools.h"

namespace {

using marathon::json;
using marathon::fuzz::expect;

// The tools a run offers (loop/run_tools.cc make_run_tools), without linking the loop.
const std::vector<std::unique_ptr<marathon::Tool>>& tools() {
  static const auto all = [] {
    std::vector<std::unique_ptr<marathon::Tool>> t = marathon::make_workspace_tools();
    t.push_back(marathon::make_evaluate_tool());
    t.push_back(marathon::make_profile_tool());
    t.push_back(marathon::make_note_tool());
    t.push_back(marathon::make_recall_tool());
    t.push_back(marathon::make_revert_tool());
    t.push_back(marathon::make_finish_tool());
    return t;
  }();
  return all;
}

void check_problems(const std::vector<std::string>& problems, const std::string& where) {
  for (const std::string& p : problems) {
    expect(p.rfind(where, 0) == 0 && p.find(": ") != std::string::npos,
           "a schema problem not of the form \"where: what\": " + p);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(marathon::fuzz::bytes(data + 1, size - 1));
  if (data[0] == 0xff) {
    json pair = marathon::read_outside_json(text).value;
    if (!pair.is_array() || pair.size() != 2) return 0;
    check_problems(marathon::validate_schema(pair[1], pair[0]), "arguments");
    return 0;
  }
  const marathon::Tool& tool = *tools()[data[0] % tools().size()];
  std::string error;
  std::optional<json> args = marathon::parse_tool_arguments(tool.name(), text, &error);
  if (!args) {
    expect(!error.empty(), "parse_tool_arguments refused without a reason");
    return 0;
  }
  expect(args->is_object(), "parse_tool_arguments returned a non-object");
  const json schema = tool.parameters();
  std::vector<std::string> problems = marathon::validate_schema(*args, schema);
  check_problems(problems, "arguments");
  if (problems.empty()) {
    for (const json& r : schema.value("required", json::array())) {
      expect(args->contains(r.get<std::string>()),
             "arguments without required " + r.dump() + " passed " + tool.name() + "'s schema");
    }
  }
  return 0;
}
