#include "loop/tool_call_log.h"

#include <fmt/format.h>

#include <chrono>

#include "core/fold.h"

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

events::ToolFinished finished_payload(const std::string& call_id, const std::string& name,
                                      const ToolResult& r, double elapsed_s) {
  events::ToolFinished p;
  p.call_id = call_id;
  p.name = name;
  p.ok = r.ok;
  p.output = r.output;
  p.elapsed_s = elapsed_s;
  p.output_sha = r.full_output_sha;
  if (r.gpu_s > 0) p.gpu_s = r.gpu_s;
  return p;
}

std::vector<NewEvent> with_effects(const events::ToolFinished& finished, const Event& started,
                                   ToolResult& r) {
  std::vector<NewEvent> batch{make_event(finished, started.id)};
  bool has_finish = false;
  for (NewEvent& e : r.events) {
    if (e.causation.empty()) e.causation = started.id;
    has_finish = has_finish || is<events::RunFinished>(e);
    batch.push_back(std::move(e));
  }
  if (r.finishes_run && !has_finish) {
    batch.push_back(make_event(events::RunFinished{"finish", r.output}, started.id));
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
  CheckedCall checked =
      tools.check_json(call.name, call.arguments.is_null() ? json::object() : call.arguments);
  if (!checked.ok()) {
    out.error = checked.error;
    return out;
  }
  events::ToolStarted started_payload;
  started_payload.call_id = call.call_id;
  started_payload.name = call.name;
  started_payload.arguments = checked.arguments;
  started_payload.source = call.source;
  Event started = append_folded(store, state, {make_event(started_payload)}, &out.events).front();

  auto t0 = std::chrono::steady_clock::now();
  ToolContext ctx = tool_context(store, state, run_dir);
  out.result = ToolRegistry::run(*checked.tool, checked.arguments, ctx);
  out.ran = true;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  append_folded(store, state,
                with_effects(finished_payload(call.call_id, call.name, out.result, elapsed),
                             started, out.result),
                &out.events);
  return out;
}

}  // namespace marathon
