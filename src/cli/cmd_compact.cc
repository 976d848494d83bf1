// marathon compact RUN_DIR [--now]: asks for a compaction by hand.
//
// Without --now it appends compaction.requested{trigger: manual}; the runner serves it at its next
// step (a running run) or when the run is resumed (a stopped one), with a model-written summary and
// the usual fallback. With --now, on a stopped run only (paused or finished), it compacts at once:
// old tool outputs elided and a structural summary built by the runtime from the log (no model
// call: this command has no model). Both record trigger "manual".
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.h"
#include "context/compaction.h"
#include "context/context_config.h"
#include "core/event_store.h"
#include "core/fold.h"
#include "core/run_dir.h"
#include "loop/run_tools.h"

namespace marathon::cli {
namespace {

int do_compact(const std::string& run_dir, bool now) {
  RunDir dir = existing_run_dir(run_dir);
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kOpen);
  std::vector<Event> events = store->read();
  State s = fold(events);
  if (!s.created) {
    spdlog::error("{}: the log holds no run", store->path());
    return 1;
  }
  if (now && !s.paused && !s.done) {
    spdlog::error(
        "{}: --now works on a stopped run only (this one is neither paused nor finished; if its "
        "runner was killed, `marathon resume` it, or drop --now to have the runner compact)",
        run_dir);
    return 2;
  }
  if (s.pending_compaction_request == 0) {
    Event e = store->append(make_event(events::CompactionRequested{"manual"}));
    apply(s, e);
    events.push_back(e);
  }
  if (!now) {
    std::printf("compaction requested (seq %lld): the runner serves it at its next step%s\n",
                static_cast<long long>(s.pending_compaction_request),
                s.paused || s.done ? " (the run is stopped: `marathon resume` it)" : "");
    return 0;
  }

  context::ContextConfig cfg = context::ContextConfig::from_run_config(s.config);
  json tools = make_run_tools(&s).openai_tools();
  context::CompactionPlan plan =
      context::plan_compaction(s, events, cfg, tools, context::Force::kManual);
  context::ContextIO io;
  io.append = [&](const NewEvent& e) { return store->append(e); };
  io.put_blob = [&](const std::string& bytes) { return store->put_blob(bytes); };
  io.get_blob = [&](const std::string& sha) { return store->get_blob(sha); };
  context::CompactionResult r =
      context::run_compaction(plan, s, events, cfg, /*summariser=*/{}, io, tools);
  std::printf("compaction (manual, now): %s, source %s, %lld -> %lld tokens (estimate)\n",
              r.outcome.c_str(), r.source.c_str(), static_cast<long long>(r.tokens_before),
              static_cast<long long>(r.tokens_after));
  return 0;
}

}  // namespace

void register_compact(CLI::App& app) {
  auto run_dir = std::make_shared<std::string>();
  auto now = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "compact", "Ask for a context compaction (served by the runner at its next step)");
  sub->add_option("RUN_DIR", *run_dir, "Run directory")->required();
  sub->add_flag("--now", *now,
                "Compact a stopped run at once with a structural summary (no model call)");
  sub->callback([run_dir, now] { exit_code = do_compact(*run_dir, *now); });
}

}  // namespace marathon::cli
