#include "tools/tool_profile.h"

#include <fmt/format.h>

#include <cstdlib>

#include "eval/evaluator.h"
#include "eval/result_cache.h"
#include "tools/tool_evaluate.h"

namespace marathon {
namespace {

class ProfileTool : public Tool {
 public:
  std::string name() const override { return "profile"; }
  std::string description() const override {
    return "Profile the current workspace with the task's evaluator (Nsight Compute on GPU tasks): "
           "achieved bandwidth and FLOP rate against the machine's ceilings, occupancy, "
           "registers, spills, the dominant stall. Slower than evaluate; not recorded as an "
           "evaluation.";
  }
  json parameters() const override {
    return {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
  }
  bool idempotent() const override { return true; }  // no effect beyond its output

  ToolResult run(const json&, ToolContext& ctx) override {
    ToolResult r;
    TaskSpec task = task_of_run(*ctx.state);
    if (task.needs_gpu && eval::detect_device() == "cpu") {
      r.ok = false;
      r.output = fmt::format(
          "profile needs a GPU: task {} runs on a GPU and this machine has none (nvidia-smi "
          "found no device). Use evaluate for correctness; timing and profiling need a GPU.",
          task.name);
      return r;
    }
    eval::EvalOptions eo;
    eo.env.emplace("MARATHON_PROFILE", std::string(1, '1'));
    eval::EvalOutcome o = eval::run_evaluator(task, ctx.workspace, eo);
    const EvalResult res = read_eval_result(o.result);
    r.ok = o.status == eval::EvalStatus::kOk;
    r.gpu_s = task.needs_gpu ? o.elapsed_s : 0.0;
    std::string out =
        fmt::format("profile ({}, {:.1f} s)\n", eval::to_string(o.status), o.elapsed_s);
    for (const auto& [k, v] : {std::pair<const char*, const json*>{"profile", &res.profile},
                               {"metrics", &res.metrics},
                               {"details", &res.details}}) {
      if (!v->is_null() && !v->empty()) {
        std::string text = v->dump();
        if (text.size() > 2000) text = text.substr(0, 2000) + "...";
        out += fmt::format("{}: {}\n", k, text);
      }
    }
    std::string log = res.log;
    if (log.size() > 2000) log = log.substr(0, 2000) + "\n[log cut]";
    out += "log: " + log;
    r.output = out;
    return r;
  }
};

}  // namespace

std::unique_ptr<Tool> make_profile_tool() { return std::make_unique<ProfileTool>(); }

}  // namespace marathon
