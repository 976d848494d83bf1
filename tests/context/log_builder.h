// LogBuilder: a test's event stream, built the way the loop writes it (no store, no I/O).
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/compaction_log.h"
#include "core/event.h"
#include "core/fold.h"
#include "core/state.h"

namespace marathon::context::testing {

class LogBuilder {
 public:
  std::vector<Event> events;
  State state;  // fold of `events`, kept current by add()

  // run.created for the demo task (goal, budget, config with the window).
  void created(int64_t context_window = 32000, int64_t max_tool_calls = 1200) {
    add(events::RunCreated::kType,
        {{"run_id", "run-test"},
         {"task",
          {{"name", "cpu-matmul"},
           {"description", "Make matmul fast."},
           {"editable", json::array({"kernel.cc"})}}},
         {"task_dir", "tasks/cpu-matmul"},
         {"goal",
          {{"objective", "Beat the naive matmul by 4x"},
           {"metric", "speedup"},
           {"direction", "max"},
           {"target", 4.0}}},
         {"budget", {{"max_tool_calls", max_tool_calls}}},
         {"config", {{"policy", "llm"}, {"context_window", context_window}}}});
  }

  const Event& append(const NewEvent& n) {
    add(n.type, n.payload);
    return events.back();
  }

  const Event& add(const std::string& type, json payload) {
    Event e;
    e.seq = static_cast<int64_t>(events.size()) + 1;
    e.id = fmt::format("ev-{}", e.seq);
    e.recorded_at_us = 1'000'000 * e.seq;
    e.type = type;
    e.payload = std::move(payload);
    apply(state, e);
    events.push_back(std::move(e));
    return events.back();
  }

  // A model.request with a raw estimate, then a model.response making one tool call.
  std::string call(const std::string& name, const json& args, const std::string& text = "",
                   int64_t estimate = 0, int64_t reported = 0) {
    std::string id = fmt::format("call-{}", ++calls_);
    add(events::ModelRequest::kType, {{"turn", calls_}, {"tokens_estimate", estimate}});
    add(events::ModelResponse::kType,
        {{"message",
          {{"content", text},
           {"tool_calls",
            json::array({{{"id", id}, {"name", name}, {"arguments", args.dump()}}})}}},
         {"usage", {{"prompt_tokens", reported}, {"completion_tokens", 10}}},
         {"provider", "openai"},
         {"model", "scripted"},
         {"finish_reason", "tool_calls"}});
    add(events::ToolStarted::kType, {{"call_id", id}, {"name", name}, {"arguments", args}});
    return id;
  }

  int64_t finish(const std::string& id, const std::string& name, const std::string& output,
                 bool ok = true) {
    return add(events::ToolFinished::kType, {{"call_id", id},
                                             {"name", name},
                                             {"ok", ok},
                                             {"output", output},
                                             {"elapsed_s", 0.01}})
        .seq;
  }

  // A full tool call: request, response, started, finished. Returns the finished seq.
  int64_t tool(const std::string& name, const json& args, const std::string& output,
               const std::string& text = "") {
    std::string id = call(name, args, text);
    return finish(id, name, output);
  }

 private:
  int calls_ = 0;
};

inline State demo_state() {
  State s;
  s.created = true;
  s.run_id = "run-test";
  s.task = {{"name", "cpu-matmul"},
            {"description", "Make matmul fast."},
            {"editable", json::array({"kernel.cc"})}};
  s.goal.objective = "Beat the naive matmul by 4x";
  s.goal.metric = "speedup";
  s.goal.target = 4.0;
  s.baseline_score = 1.0;
  s.limits.max_tool_calls = 1200;
  return s;
}

// demo_state() with what the prompt reads of the log folded in: the compaction log and the
// token calibration (State::compaction, State::token_fit), as the runner's fold has them.
inline State demo_state(const std::vector<Event>& events) {
  State s = demo_state();
  s.compaction = read_compaction_log(events);
  for (const Event& e : events) s.token_fit.add(e);
  return s;
}

inline std::string filler(size_t bytes, char seed = 'a') {
  std::string s;
  s.reserve(bytes);
  for (size_t i = 0; s.size() < bytes; ++i) {
    s += static_cast<char>(seed + (i % 7));
    s += static_cast<char>('a' + (i * 3 % 26));
    s += (i % 9 == 8) ? '\n' : ' ';
  }
  s.resize(bytes);
  return s;
}

}  // namespace marathon::context::testing
