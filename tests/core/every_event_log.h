// A log that uses every event type fold knows (and one it does not), with the corner cases of
// each: the input of the checkpoint tests, where fold(all) must equal checkpoint + fold(tail).
#pragma once

#include <string>
#include <vector>

#include "core/event.h"

namespace marathon::testing {

inline NewEvent make_event(const char* type, json payload) {
  NewEvent e;
  e.type = type;
  e.payload = std::move(payload);
  return e;
}

inline std::vector<NewEvent> every_event_log() {
  json task = {{"name", "cpu-matmul"}, {"files", {{"editable", {"*.cc"}}}}};
  json result_ok = {{"correct", true},
                    {"score", 1.25},
                    {"baseline_score", 0.5},
                    {"violations", json::array()},
                    {"metrics", {{"speedup", 1.25}, {"ms", 0.4}}},
                    {"figures", {{"bw_frac", 0.61}}},
                    {"log", "ok"}};
  json result_bad = {{"correct", true},
                     {"score", 9.0},
                     {"violations", {"reads the reference"}},
                     {"failure", "copied the reference"}};
  std::vector<NewEvent> v = {
      make_event(ev::kRunCreated,
                 {{"run_id", "run-every"},
                  {"task", task},
                  {"task_dir", "tasks/cpu-matmul"},
                  {"goal",
                   {{"objective", "faster \"matmul\" \u00e9"},
                    {"metric", "speedup"},
                    {"direction", "max"},
                    {"target", 4.0}}},
                  {"budget", {{"max_tool_calls", 50}, {"max_wall_s", 3600}, {"max_cost_usd", 2.5}}},
                  {"config", {{"policy", "llm"}, {"model", "openai:gpt-4o"}}}}),
      make_event(ev::kModelRequest,
                 {{"turn", 1}, {"prompt_sha", "ab"}, {"n_messages", 3}, {"tokens_estimate", 900}}),
      make_event(ev::kModelResponse,
                 {{"message",
                   {{"content", "let me write"},
                    {"tool_calls", {{{"id", "c1"}, {"name", "write_file"}, {"arguments", "{}"}}}}}},
                  {"usage",
                   {{"prompt_tokens", 1000},
                    {"completion_tokens", 77},
                    {"cache_read_tokens", 800},
                    {"cache_write_tokens", 100}}},
                  {"cost_usd", 0.0123},
                  {"provider", "openai"},
                  {"model", "gpt-4o"},
                  {"finish_reason", "tool_calls"}}),
      make_event(ev::kToolStarted,
                 {{"call_id", "c1"}, {"name", "write_file"}, {"arguments", {{"path", "k.cc"}}}}),
      make_event(ev::kWorkspaceWritten, {{"path", "k.cc"}, {"sha", "aa11"}, {"size", 10}}),
      make_event(ev::kWorkspaceWritten, {{"path", "old.cc"}, {"sha", "bb22"}, {"size", 3}}),
      make_event(ev::kToolFinished, {{"call_id", "c1"},
                                     {"name", "write_file"},
                                     {"ok", true},
                                     {"output", "wrote k.cc"},
                                     {"elapsed_s", 0.01}}),
      make_event(ev::kWorkspaceWritten, {{"path", "old.cc"}, {"deleted", true}}),
      make_event(ev::kToolStarted,
                 {{"call_id", "c2"}, {"name", "evaluate"}, {"arguments", json::object()}}),
      make_event(ev::kEvalFinished, {{"candidate", "cand-1"},
                                     {"cache_key", "key-1"},
                                     {"cached", false},
                                     {"status", "ok"},
                                     {"result", result_ok},
                                     {"elapsed_s", 3.5},
                                     {"gpu_s", 2.25},
                                     {"strategy", "tile 64"}}),
      make_event(ev::kToolFinished, {{"call_id", "c2"},
                                     {"name", "evaluate"},
                                     {"ok", true},
                                     {"output", "score 1.25"},
                                     {"gpu_s", 0.5}}),
      make_event(ev::kEvalFinished, {{"candidate", "cand-1"},
                                     {"cache_key", "key-1"},
                                     {"cached", true},
                                     {"status", "ok"},
                                     {"result", result_ok}}),
      make_event(ev::kEvalFinished, {{"candidate", "cand-2"},
                                     {"cache_key", "key-2"},
                                     {"status", "ok"},
                                     {"result", result_bad},
                                     {"gpu_s", 1.0}}),
      make_event(ev::kEvalFinished, {{"candidate", "cand-3"},
                                     {"cache_key", "key-3"},
                                     {"status", "timeout"},
                                     {"result", {{"correct", false}, {"error", "took 60 s"}}}}),
      make_event(ev::kLedgerNoted, {{"kind", "dead_end"}, {"text", "tile 256 spills"}}),
      make_event(ev::kModelRequest, {{"turn", 2}}),
      make_event(ev::kBudgetWarned, {{"which", "tool_calls"}, {"used", 40}, {"limit", 50}}),
      make_event(ev::kBudgetWarned, {{"which", "tool_calls"}, {"used", 45}, {"limit", 50}}),
      make_event(ev::kCompactionRequested, {{"trigger", "manual"}}),
      make_event(ev::kCompactionProposed,
                 {{"trigger", "manual"}, {"summarized_through", 10}, {"tokens_before", 9000}}),
      make_event(ev::kCompactionInstalled, {{"trigger", "manual"},
                                            {"outcome", "compacted"},
                                            {"summary", "we tried tiles"},
                                            {"summarized_through", 10},
                                            {"tokens_before", 9000},
                                            {"tokens_after", 2000},
                                            {"source", "model"}}),
      make_event(ev::kCompactionInstalled,
                 {{"trigger", "auto"}, {"outcome", "noop"}, {"summary", ""}}),
      make_event("compaction.elided", {{"trigger", "auto"},
                                       {"reason", "threshold"},
                                       {"outcome", "compacted"},
                                       {"source", "elision"},
                                       {"elided_through", 8}}),
      make_event("user.message", {{"content", "keep going"}, {"reason", "goal_turn"}}),
      make_event(ev::kGoalChanged, {{"verb", "edit"}, {"objective", "beat 2x"}}),
      make_event(ev::kGoalChanged, {{"verb", "pause"}}),
      make_event(ev::kRunPaused, {{"reason", "user"}}),
      make_event(ev::kGoalChanged, {{"verb", "resume"}, {"progress", "half way"}}),
      make_event(ev::kRunResumed, {{"reason", "user"}}),
      make_event(ev::kRunResumed, {{"reason", "crash"}}),
      make_event(ev::kSandboxDisabled,
                 {{"reason", "bubblewrap cannot create the sandbox"}, {"command", "resume"}}),
      make_event(ev::kGoalChanged, {{"verb", "set"}, {"objective", "beat 3x"}, {"target", 3.0}}),
      make_event("some.future_type", {{"x", 1}}),
      make_event(ev::kToolStarted,
                 {{"call_id", "c3"}, {"name", "run"}, {"arguments", {{"cmd", "make"}}}}),
      make_event(ev::kRunFinished, {{"reason", "finish"}, {"summary", "done"}}),
      make_event(ev::kRunForked,
                 {{"run_id", "run-fork"}, {"from_run_id", "run-every"}, {"at_seq", 30}}),
      make_event(ev::kRunResumed, {{"reason", "fork"}}),
      make_event(ev::kToolStarted,
                 {{"call_id", "c4"}, {"name", "read_file"}, {"arguments", {{"path", "k.cc"}}}}),
  };
  return v;
}

}  // namespace marathon::testing
