#include "loop/tool_call_log.h"

#include <fmt/format.h>

#include <chrono>

#include "core/fold.h"
#include "loop/runner.h"
#include "tools/json_schema.h"

namespace marathon {

ToolContext tool_context(EventStore& store, const State* state,
                         const std::filesystem::path& run_dir) {
  ToolContext ctx;
  ctx.workspace = run_dir / "workspace";
  ctx.state = state;
  ctx.run_dir = run_dir;
  ctx.put_blob = [&store](const std::string& bytes) { return store.put_blob(bytes); };
  ctx.get_blob = [&store](const std::string& sha) {
    std::optional<std::string> b = store.get_blob(sha);
    if (!b) throw std::runtime_error(fmt::format("{}: blob {} is missing", store.path(), sha));
    return *b;
  };
  return ctx;
}

NewEvent tool_finished_event(const Event& started, const std::string& call_id,
                             const std::string& name, const ToolResult& r, double elapsed_s) {
  json p = {{"call_id", call_id},
            {"name", name},
            {"ok", r.ok},
            {"output", r.output},
            {"elapsed_s", elapsed_s}};
  if (!r.full_output_sha.empty()) p["output_sha"] = r.full_output_sha;
  if (r.gpu_s > 0) p["gpu_s"] = r.gpu_s;
  return {ev::kToolFinished, p, started.id};
}

std::vector<NewEvent> with_effects(NewEvent finished, const Event& started, ToolResult& r) {
  std::vector<NewEvent> batch{std::move(finished)};
  bool has_finish = false;
  for (NewEvent& e : r.events) {
    if (e.causation.empty()) e.causation = started.id;
    has_finish = has_finish || e.type == ev::kRunFinished;
    batch.push_back(std::move(e));
  }
  if (r.finishes_run && !has_finish) {
    batch.push_back({ev::kRunFinished, {{"reason", "finish"}, {"summary", r.output}}, started.id});
  }
  return batch;
}

namespace {

// Appends `batch`, folding into *state whatever others appended before it and then the batch.
std::vector<Event> append_folded(EventStore& store, State* state,
                                 const std::vector<NewEvent>& batch, std::vector<Event>* all) {
  std::vector<Event> stored = store.append_batch(batch);
  if (!stored.empty() && stored.front().seq > state->last_seq + 1) {
    for (const Event& e : store.read(state->last_seq + 1, stored.front().seq - 1)) apply(*state, e);
  }
  for (const Event& e : stored) {
    apply(*state, e);
    all->push_back(e);
  }
  return stored;
}

}  // namespace

DirectCallResult call_tool_logged(EventStore& store, State* state, const ToolRegistry& tools,
                                  const std::filesystem::path& run_dir, const DirectCall& call) {
  DirectCallResult out;
  Tool* tool = tools.find(call.name);
  if (!tool) {
    std::string valid;
    for (const std::string& n : tools.names()) valid += (valid.empty() ? "" : ", ") + n;
    out.error = fmt::format("unknown tool \"{}\"; the tools are: {}", call.name, valid);
    return out;
  }
  json args = call.arguments.is_null() ? json::object() : call.arguments;
  std::vector<std::string> problems = validate_schema(args, tool->parameters());
  if (!problems.empty()) {
    out.error = fmt::format("invalid arguments for `{}`:", call.name);
    for (const std::string& p : problems) out.error += "\n- " + p;
    return out;
  }
  json started_payload = {{"call_id", call.call_id}, {"name", call.name}, {"arguments", args}};
  for (const auto& [k, v] : call.extra.items()) started_payload[k] = v;
  Event started =
      append_folded(store, state, {{ev::kToolStarted, started_payload}}, &out.events).front();

  auto t0 = std::chrono::steady_clock::now();
  ToolContext ctx = tool_context(store, state, run_dir);
  out.result = run_tool_safely(*tool, args, ctx);
  out.ran = true;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  NewEvent fin = tool_finished_event(started, call.call_id, call.name, out.result, elapsed);
  append_folded(store, state, with_effects(std::move(fin), started, out.result), &out.events);
  return out;
}

}  // namespace marathon
