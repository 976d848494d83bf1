// How a tool call is logged, for the runner's calls and for those a client makes directly (the MCP
// server): tool.started before the tool acts, then tool.finished and the tool's effect events in
// one transaction, each effect caused by the tool.started.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/event_store.h"
#include "core/state.h"
#include "tools/tool_registry.h"

namespace marathon {

// The context a tool runs in on a run: its workspace, its state, blobs from `store`.
ToolContext tool_context(EventStore& store, const State* state,
                         const std::filesystem::path& run_dir);

// tool.finished's payload for a call and its result.
events::ToolFinished finished_payload(const std::string& call_id, const std::string& name,
                                      const ToolResult& r, double elapsed_s);

// `finished` (caused by `started`) followed by the tool's effects (caused by `started` unless they
// name a cause), and run.finished{finish} when the tool finishes the run without logging it itself.
std::vector<NewEvent> with_effects(const events::ToolFinished& finished, const Event& started,
                                   ToolResult& r);

// A call made outside the model loop.
struct DirectCall {
  std::string call_id;  // unique in the run
  std::string name;     // a tool of the registry
  json arguments;       // checked against the tool's schema before anything is logged
  std::string source;   // tool.started's `source` (events::ToolStarted::kMcp)
};

struct DirectCallResult {
  bool ran = false;           // false: refused (unknown tool, bad arguments); nothing logged
  std::string error;          // why it was refused (the registry's check, tools/tool_registry.h)
  ToolResult result;          // the tool's result (its events are in `events`)
  std::vector<Event> events;  // appended: tool.started, tool.finished, the effects
};

// Checks the arguments, appends tool.started, runs the tool (an exception is a failed result),
// appends tool.finished with the effects, and applies every appended event to *state (which must
// be the fold of `store` up to now; events others appended meanwhile are folded in first).
DirectCallResult call_tool_logged(EventStore& store, State* state, const ToolRegistry& tools,
                                  const std::filesystem::path& run_dir, const DirectCall& call);

}  // namespace marathon
