#include "control/compact_verb.h"

#include <fmt/format.h>

#include "context/compaction.h"
#include "context/context_config.h"
#include "core/event_store.h"
#include "core/fold.h"
#include "core/run_dir.h"
#include "loop/run_tools.h"

namespace marathon::control {

CompactResult compact_run(const std::filesystem::path& run_dir, bool now) {
  RunDir dir = existing_run_dir(run_dir);
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kOpen);
  std::vector<Event> events = store->read();
  CompactResult r;
  State& s = r.state;
  s = fold(events);
  if (!s.created) {
    r.status = VerbStatus::kNoRun;
    r.message = fmt::format("{}: the log holds no run", store->path());
    return r;
  }
  if (now && !s.paused && !s.done) {
    r.status = VerbStatus::kWrongState;
    r.message = fmt::format(
        "{}: compact --now works on a stopped run only (this one is neither paused nor "
        "finished; if its runner was killed, `marathon resume` it, or ask without --now to have "
        "the runner compact)",
        run_dir.string());
    return r;
  }
  if (s.compaction.pending_request_seq == 0) {
    Event e = store->append(make_event(events::CompactionRequested{"manual"}));
    apply(s, e);
    events.push_back(e);
  }
  r.seq = s.compaction.pending_request_seq;
  if (!now) return r;

  context::ContextConfig cfg = context::ContextConfig::from_run_config(s.config);
  json tools = make_run_tools(&s).openai_tools();
  context::CompactionPlan plan =
      context::plan_compaction(s, events, cfg, tools, context::Force::kManual);
  context::ContextIO io;
  io.append = [&](const NewEvent& e) { return store->append(e); };
  io.put_blob = [&](const std::string& bytes) { return store->put_blob(bytes); };
  io.get_blob = [&](const std::string& sha) { return store->get_blob(sha); };
  context::CompactionResult c =
      context::run_compaction(plan, s, events, cfg, /*summariser=*/nullptr, io, tools);
  r.compacted_now = true;
  r.outcome = c.outcome;
  r.source = c.source;
  r.tokens_before = c.tokens_before;
  r.tokens_after = c.tokens_after;
  for (const Event& e : c.appended) apply(s, e);
  return r;
}

}  // namespace marathon::control
