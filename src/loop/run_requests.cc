#include "loop/run_requests.h"

#include <fmt/format.h>

#include "context/compaction.h"
#include "context/context_config.h"
#include "core/fold.h"
#include "core/load_state.h"
#include "loop/run_tools.h"

namespace marathon {

CompactionAsked ask_compaction(EventStore& store, bool now, const std::string& run_dir) {
  CompactionAsked r;
  std::vector<Event> events = store.read();
  State s = fold(events);
  if (!s.created) {
    r.error = CompactionAsked::Error::kNoRun;
    r.message = fmt::format("{}: the log holds no run", store.path());
    return r;
  }
  if (now && !s.paused && !s.done) {
    r.error = CompactionAsked::Error::kNotStopped;
    r.message = fmt::format(
        "{}: compacting at once (--now) works on a stopped run only (this one is neither paused "
        "nor finished; if its runner was killed, `marathon resume` it, or ask for a compaction "
        "without --now to have the runner compact at its next step)",
        run_dir);
    return r;
  }
  if (s.pending_compaction_request == 0) {
    Event e = store.append({ev::kCompactionRequested, {{"trigger", "manual"}}});
    apply(s, e);
    events.push_back(e);
    r.appended = true;
  }
  r.request_seq = s.pending_compaction_request;
  if (now) {
    context::ContextConfig cfg = context::ContextConfig::from_run_config(s.config);
    json tools = make_run_tools(&s).openai_tools();
    context::CompactionPlan plan =
        context::plan_compaction(s, events, cfg, tools, context::Force::kManual);
    context::ContextIO io;
    io.append = [&](const NewEvent& e) { return store.append(e); };
    io.put_blob = [&](const std::string& bytes) { return store.put_blob(bytes); };
    io.get_blob = [&](const std::string& sha) { return store.get_blob(sha); };
    context::CompactionResult c =
        context::run_compaction(plan, s, events, cfg, /*summariser=*/nullptr, io, tools);
    r.ran = true;
    r.outcome = c.outcome;
    r.source = c.source;
    r.tokens_before = c.tokens_before;
    r.tokens_after = c.tokens_after;
  }
  r.state = load_state(store);
  return r;
}

StopAsked ask_stop(EventStore& store, const std::string& reason) {
  StopAsked r;
  State s = load_state(store);
  if (!s.created) {
    r.error = StopAsked::Error::kNoRun;
    r.message = fmt::format("{}: the log holds no run", store.path());
    return r;
  }
  if (s.done) {
    r.error = StopAsked::Error::kFinished;
    r.message = fmt::format("the run has finished ({}); there is nothing to stop", s.finish_reason);
    return r;
  }
  if (s.paused) {
    r.paused = true;
    return r;
  }
  r.event = store.append({ev::kRunStopRequested, {{"reason", reason}}});
  return r;
}

}  // namespace marathon
