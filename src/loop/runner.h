// Runner: the loop of a run (docs/loop.md). State is only ever the fold of the log; every decision
// is taken from the log, so a runner started on a killed run's log carries on where it stopped:
//
//   while not done:
//     notice events others appended (goal verbs, a stop request); stop on pause/clear/interrupt/
//        a stop request
//     budgets: budget.warned near a limit, run.finished{budget} at it
//     in-flight tools of a killed runner: re-run the idempotent ones, report the others interrupted
//     tool calls of the last model.response not yet finished: validate, tool.started, run,
//        tool.finished + effect events in one transaction (one call per iteration)
//     otherwise ask the policy: compaction, model.request (unless one is pending), policy.next,
//        model.response appended before anything acts on it, in one transaction with the first
//        call's tool.started (that call then runs at once) unless a stop or a budget note is due;
//        a stop without `finish` while the goal is open starts a goal turn (user.message); too
//        many idle turns pause the goal. A turn the provider paused is no stop: the next prompt
//        ends with it, as it is. The calls after an accepted `finish` are answered as not run
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "context/compaction.h"
#include "context/context_config.h"
#include "context/prompt_cache.h"
#include "core/event_store.h"
#include "core/state.h"
#include "core/turn_tracker.h"
#include "policy/policy.h"
#include "tools/tool_registry.h"

namespace marathon {

// Replay: the logged result of a tool call that cannot be reproduced offline, by the model turn
// (0-based count of model.response events before it) and the call's index in that turn. nullopt:
// run the tool.
struct LoggedResult {
  ToolResult result;
  events::ToolFinished finished;  // the original tool.finished (ok, output, interrupted, ...)
  // The original stopped inside this call (an evaluation it never finished): the replay ends
  // there rather than pay for it; `result` and `finished` are empty.
  bool original_stopped = false;
};
using LoggedResultFn =
    std::function<std::optional<LoggedResult>(int64_t turn, size_t index, const std::string& tool)>;

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void on_event(const Event& e, const State& s) = 0;
};

struct RunnerHooks {
  std::function<bool()> interrupted;  // SIGINT seen: pause at the next step boundary
  std::function<int64_t()> now_us;    // wall clock; default: system_clock
  LoggedResultFn logged_result;       // replay only
  ProgressSink* progress = nullptr;
  eval::Executor* executor = nullptr;  // where `evaluate` runs evaluations (null: in-process)
  // Parallel branches (loop/branches.h): the results of the other branches, and the run's budget
  // use with theirs added to this branch's own (budgets are the run's, shared).
  eval::SharedResults* shared_results = nullptr;
  std::function<BudgetUsed(const BudgetUsed& own)> shared_budget;
  // Called before each step (replay: appends what others appended to the original at this point,
  // e.g. a manual compaction request or a goal verb, which the runner then reads as it would).
  std::function<void()> between_steps;
  // Replay: the logged eval.remeasured of a re-measurement the replay owes. Nullopt: the original
  // stopped before it (killed or paused mid-confirmation), and the replay ends there, as when its
  // model responses run out: a replay pays for no evaluation.
  std::function<std::optional<events::EvalRemeasured>(const RemeasureDue&)> logged_remeasure;
};

enum class RunOutcome { kFinished, kPaused, kFailed };

struct RunReport {
  RunOutcome outcome = RunOutcome::kFailed;
  std::string reason;  // run.finished / run.paused reason
};

// Where the runner's own time goes (bench/loop reads it).
struct RunnerStats {
  double compaction_s = 0;   // plan_compaction / run_compaction
  double prompt_s = 0;       // build_prompt (with the prompt's sha256 for model.request)
  double append_s = 0;       // durable appends (SQLite, fsync)
  int64_t transactions = 0;  // durable appends made
  double policy_s = 0;       // policy.next()
  double tools_s = 0;        // Tool::run()
  // Start-up: the fold checkpoint the state came from (0: none, every event folded), the events
  // folded after it, and the events kept in memory (those after the installed summary point).
  int64_t checkpoint_seq = 0;
  int64_t events_folded_at_start = 0;
  int64_t events_read_at_start = 0;
};

class Runner {
 public:
  // `store` must hold a created run; the state is its newest fold checkpoint plus the events after
  // it, and only the events after the installed summary point are read into memory.
  // Prompts and compaction come from the context module, configured by the run's config.
  Runner(EventStore& store, Policy& policy, ToolRegistry& tools, std::filesystem::path run_dir,
         RunnerHooks hooks = {});

  // Drives the run until it finishes, pauses (interrupt, goal paused, model unavailable) or fails.
  RunReport run();

  const State& state() const { return state_; }
  // The events the runner keeps: the log after the installed summary point (the prompt cache holds
  // what it needs of the older ones: context::drop_summarized_events), the whole log before the
  // first prompt.
  const std::vector<Event>& events() const { return events_; }
  double wall_s() const;  // active time including the current segment
  const RunnerStats& stats() const { return stats_; }

 private:
  // A tool call checked and ready to log: its tool.started event and what running it needs.
  struct PreparedCall {
    LoggedToolCall call;
    CheckedCall checked;  // the registry's check: the tool and arguments, or why it cannot run
    int64_t turn = 0;     // model responses up to and including the one that asked for it
    NewEvent started;
  };

  std::vector<Event> append(std::vector<NewEvent> batch);
  // Plans and runs compaction (cuts_only: only a cut of a unit too large for the window); true
  // when it appended anything.
  bool compact(context::Force force, bool cuts_only);
  // Calibrated tokens of the prompt with no turns: what no compaction can shrink.
  int64_t fixed_prompt_tokens();
  bool stop_or_note_due(const BudgetUsed& used) const;
  PreparedCall prepare_call(const LoggedToolCall& call, int64_t turn);
  void execute_call(const PreparedCall& call, const Event& started);
  // Appends a call's tool.finished and effects; when the call finished the run (an accepted
  // `finish`), the other calls of its turn, which never run, are answered as not run before
  // run.finished.
  void append_result(const events::ToolFinished& finished, const Event& started,
                     ToolResult& result);
  // tool.finished{not_run} for each call of the last turn without a result but `except_id`.
  std::vector<NewEvent> not_run_answers(const std::string& reason, const std::string& summary,
                                        const std::string& except_id = "") const;
  void observe(const Event& e);
  void sync();
  // The stop due now, if any; a re-measurement owed in its place sets *stepped (the step was
  // that re-measurement).
  std::optional<RunReport> check_stops(bool* stepped);
  // One re-measurement (core/confirmation.h), appended before anything else is done. In a replay
  // one the original never logged is not run: it sets replay_ended_ instead.
  void remeasure_one(const RemeasureDue& due);
  // The final confirmation: the re-measurements final_confirmation_due asks for, one after the
  // other, until none is owed or a signal asks the runner to stop.
  void confirm_final();
  void recover_in_flight();
  void run_call(const LoggedToolCall& call);
  std::optional<RunReport> ask_policy();
  std::optional<RunReport> start_goal_turn();
  ToolContext tool_context(int64_t started_seq);

  EventStore& store_;
  Policy& policy_;
  context::Summariser summarise_;  // policy_ as compaction's summariser
  ToolRegistry& tools_;
  std::filesystem::path run_dir_;
  context::ContextConfig context_config_;
  json tools_json_;
  RunnerHooks hooks_;
  State state_;
  std::vector<Event> events_;
  std::optional<context::PromptCache> prompt_cache_;  // prompt pieces kept between steps
  RunnerStats stats_;
  // Set where a replay reaches what the original never finished (remeasure_one, execute_call):
  // why the replay ends; the next stop check pauses it.
  std::optional<std::string> replay_ended_;
};

}  // namespace marathon
