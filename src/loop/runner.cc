#include "loop/runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "context/compaction.h"
#include "context/prompt_builder.h"
#include "context/prompt_texts.h"
#include "context/transcript.h"
#include "core/checkpoint.h"
#include "core/fold.h"
#include "goal/budget.h"
#include "loop/stops.h"
#include "loop/tool_call_log.h"
#include "tools/remeasure.h"

namespace marathon {

namespace {

using namespace events;
constexpr int kMaxConsecutiveModelErrors = 3;

// Adds the seconds since construction to a counter when it goes out of scope.
class Timer {
 public:
  explicit Timer(double* into) : into_(into), t0_(std::chrono::steady_clock::now()) {}
  ~Timer() {
    *into_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  double* into_;
  std::chrono::steady_clock::time_point t0_;
};

int64_t system_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A compaction event that shrank the prompt (outcome compacted).
bool shrank_prompt(const Event& e) {
  constexpr CompactionOutcome kDone = CompactionOutcome::kCompacted;
  if (is<CompactionInstalled>(e)) return payload_of<CompactionInstalled>(e).outcome == kDone;
  if (is<CompactionElided>(e)) return payload_of<CompactionElided>(e).outcome == kDone;
  if (is<CompactionCut>(e)) return payload_of<CompactionCut>(e).outcome == kDone;
  return false;
}

NewEvent user_message(std::string reason, std::string content) {
  UserMessage m;
  m.reason = std::move(reason);
  m.content = std::move(content);
  return make_event(m);
}

std::string short_number(double v) { return fmt::format("{:.4g}", v); }

std::string best_text(const State& s) {
  if (!s.best_score) return "no correct evaluation yet";
  std::string out = best_figure_text(s, short_number);
  if (std::string b = baseline_text(s, short_number); !b.empty()) out += "; " + b;
  return out;
}

// A budget whose use a re-measurement adds to: the final confirmation is not run past it.
bool spent_by_evaluations(const StopDecision& d) {
  return d.exhausted && (d.exhausted->which == "wall_time" || d.exhausted->which == "gpu_time");
}

}  // namespace

Runner::Runner(EventStore& store, Policy& policy, ToolRegistry& tools,
               std::filesystem::path run_dir, RunnerHooks hooks)
    : store_(store),
      policy_(policy),
      summarise_(summariser_of(policy, &state_)),
      tools_(tools),
      run_dir_(std::move(run_dir)),
      hooks_(std::move(hooks)) {
  if (!hooks_.now_us) hooks_.now_us = system_now_us;
  // The newest fold checkpoint and the events after it give the state; the events kept in memory
  // are those after the installed summary point, all that prompt assembly and compaction read.
  if (std::optional<State> c = read_checkpoint(store_, INT64_MAX)) state_ = std::move(*c);
  stats_.checkpoint_seq = state_.last_seq;
  std::vector<Event> tail = store_.read(state_.last_seq + 1);
  for (const Event& e : tail) apply(state_, e);
  stats_.events_folded_at_start = static_cast<int64_t>(tail.size());
  // The kept events: those of the tail after the summary point, and before them the ones between
  // the summary point and the checkpoint (read once, here).
  const int64_t keep_from = state_.compaction.summarized_through + 1;
  if (keep_from <= stats_.checkpoint_seq) events_ = store_.read(keep_from, stats_.checkpoint_seq);
  for (Event& e : tail) {
    if (e.seq >= keep_from) events_.push_back(std::move(e));
  }
  stats_.events_read_at_start = static_cast<int64_t>(events_.size());
  if (!state_.created) {
    throw StoreError(fmt::format("{}: the log holds no run.created event", store_.path()));
  }
  context_config_ = context::ContextConfig::from_run_config(state_.config);
  tools_json_ = tools_.openai_tools();
  prompt_cache_.emplace(context_config_, tools_json_);
}

double Runner::wall_s() const {
  if (events_.empty()) return state_.used.wall_s;
  double since = double(hooks_.now_us() - events_.back().recorded_at_us) / 1e6;
  return state_.used.wall_s + std::max(0.0, since);
}

void Runner::observe(const Event& e) {
  apply(state_, e);
  events_.push_back(e);
  if (hooks_.progress) hooks_.progress->on_event(e, state_);
}

std::vector<Event> Runner::append(std::vector<NewEvent> batch) {
  std::vector<Event> stored;
  {
    Timer t(&stats_.append_s);
    stored = store_.append_batch(batch);
    ++stats_.transactions;
  }
  // Another process (a goal verb) may have appended since we last looked: those events come first.
  if (!stored.empty() && stored.front().seq > state_.last_seq + 1) {
    for (const Event& e : store_.read(state_.last_seq + 1, stored.front().seq - 1)) observe(e);
  }
  for (const Event& e : stored) observe(e);
  // Every ~1000 events, the folded state as a checkpoint: opening a long run folds only the tail.
  maybe_write_checkpoint(store_, state_);
  return stored;
}

void Runner::sync() {
  if (store_.last_seq() <= state_.last_seq) return;
  for (const Event& e : store_.read(state_.last_seq + 1)) observe(e);
}

ToolContext Runner::tool_context(int64_t started_seq) {
  ToolContext ctx = marathon::tool_context(store_, &state_, run_dir_);
  ctx.executor = hooks_.executor;
  ctx.log_now = [this](const NewEvent& e) { append({e}); };
  ctx.call_key = fmt::format("{}-{}", state_.run_id, started_seq);
  ctx.shared_results = hooks_.shared_results;
  ctx.confirm_final = [this] { confirm_final(); };
  return ctx;
}

void Runner::remeasure_one(const RemeasureDue& due) {
  std::optional<EvalRemeasured> p =
      hooks_.logged_remeasure ? hooks_.logged_remeasure(due) : std::nullopt;
  if (!p && hooks_.logged_remeasure) {
    replay_ended_ = fmt::format(
        "replay_exhausted: the logged run holds no re-measurement #{} of candidate {} (it stopped "
        "before making it)",
        due.index + 1, due.candidate.substr(0, 12));
    return;
  }
  if (!p) {
    spdlog::info("re-measuring candidate {} ({} #{})", due.candidate.substr(0, 12), due.phase,
                 due.index + 1);
    ToolContext ctx = tool_context(0);
    ctx.confirm_final = nullptr;
    Timer t(&stats_.tools_s);
    p = remeasure(state_, due, store_, ctx);
  }
  append({make_event(*p)});
}

void Runner::confirm_final() {
  // Each re-measurement moves the confirmation on (a candidate's count, or the budget's); the
  // guard only keeps a damaged state from looping here.
  for (int i = 0; i < 100000; ++i) {
    if (hooks_.interrupted && hooks_.interrupted()) return;
    std::optional<RemeasureDue> due = final_confirmation_due(state_);
    if (!due || replay_ended_) return;
    remeasure_one(*due);
  }
}

std::optional<RunReport> Runner::check_stops(bool* stepped) {
  BudgetUsed used = state_.used;
  used.wall_s = wall_s();
  if (hooks_.shared_budget) used = hooks_.shared_budget(used);
  const StopDecision d =
      decide_stop(state_, used, predicted_step(state_, events_),
                  hooks_.interrupted && hooks_.interrupted(), state_.stop_requested.has_value());
  auto pause = [this](const std::string& reason, const std::string& message) {
    append({make_event(RunPaused{reason, message})});
    return RunReport{RunOutcome::kPaused, reason};
  };
  // A replay that reached the end of what the original logged stops as a replay out of responses.
  auto replay_end = [this] {
    spdlog::warn("{}", *replay_ended_);
    append({make_event(RunPaused{"model_error", *replay_ended_})});
    return RunReport{RunOutcome::kFailed, "model_error"};
  };
  if (replay_ended_) return replay_end();
  auto finish = [this](const std::string& reason, const std::string& summary) {
    std::vector<NewEvent> batch = not_run_answers(reason, summary);
    batch.push_back(make_event(RunFinished{reason, summary}));
    append(std::move(batch));
    return RunReport{RunOutcome::kFinished, reason};
  };
  using K = StopDecision::Kind;
  switch (d.kind) {
    case K::kDone:
      return RunReport{RunOutcome::kFinished, state_.finish_reason};
    case K::kInterrupted:
      return pause("interrupted", "stopped by SIGINT or SIGTERM; `marathon resume` carries on");
    case K::kStopRequested:
      confirm_final();
      if (replay_ended_) return replay_end();
      return pause("stopped", fmt::format("stopped on request ({}); `marathon resume` carries on",
                                          state_.stop_requested->empty() ? "no reason given"
                                                                         : *state_.stop_requested));
    case K::kGoalPaused:
      return pause("goal_paused",
                   "the goal is paused; `marathon goal resume` then `marathon resume`");
    case K::kGoalCleared:
      return finish("goal_cleared", "the goal was cleared");
    case K::kTarget:
      confirm_final();
      if (replay_ended_) return replay_end();
      return finish("target", fmt::format("target {:.4g} reached: {}", *state_.goal.target,
                                          best_text(state_)));
    case K::kBudget:
      // Re-measurements take wall and GPU time: with either used up the run ends as it stands.
      if (!spent_by_evaluations(d)) confirm_final();
      if (replay_ended_) return replay_end();
      return finish("budget",
                    fmt::format("{} budget used up ({:.6g} of {:.6g}); {}", d.exhausted->which,
                                d.exhausted->used, d.exhausted->limit, best_text(state_)));
    case K::kNone:
      break;
  }
  std::vector<NewEvent> notes;
  for (const BudgetItem& b : d.notes) {
    const bool predicted = StopDecision::predicted(b);
    notes.push_back(make_event(BudgetWarned{b.which, b.used, b.limit, predicted}));
    notes.push_back(user_message(
        UserMessage::kBudget, context::budget_note(b.which, 100 * b.fraction(),
                                                   budget_line(state_.limits, used), predicted)));
  }
  if (!notes.empty()) append(std::move(notes));
  // A would-be best is re-measured before anything else happens (the next call, the next prompt).
  if (std::optional<RemeasureDue> due = confirmation_due(state_)) {
    remeasure_one(*due);
    if (replay_ended_) return replay_end();
    *stepped = true;
  }
  return std::nullopt;
}

std::vector<NewEvent> Runner::not_run_answers(const std::string& reason, const std::string& summary,
                                              const std::string& except_id) const {
  // Calls of the last turn that will now never run are answered as not run (and use nothing), so
  // the log and the transcript never hold a call that looks pending or lost.
  std::vector<NewEvent> answers;
  for (const LoggedToolCall& call : state_.turn.unfinished_calls()) {
    if (call.id == except_id) continue;
    ToolFinished f;
    f.call_id = call.id;
    f.name = call.name;
    f.not_run = true;
    f.output = context::not_run_tool_output(reason, summary);
    answers.push_back(make_event(f));
  }
  return answers;
}

void Runner::append_result(const ToolFinished& finished, const Event& started, ToolResult& result) {
  std::vector<NewEvent> batch = with_effects(finished, started, result);
  auto run_finished = std::find_if(batch.begin(), batch.end(),
                                   [](const NewEvent& e) { return e.type == RunFinished::kType; });
  if (run_finished != batch.end()) {
    const RunFinished end = run_finished->payload.get<RunFinished>();
    std::vector<NewEvent> answers = not_run_answers(end.reason, end.summary, finished.call_id);
    batch.insert(run_finished, std::make_move_iterator(answers.begin()),
                 std::make_move_iterator(answers.end()));
  }
  append(std::move(batch));
}

Runner::PreparedCall Runner::prepare_call(const LoggedToolCall& call, int64_t turn) {
  PreparedCall p;
  p.call = call;
  p.checked = tools_.check(call.name, call.arguments);
  p.turn = turn;
  ToolStarted started;
  started.call_id = call.id;
  started.name = call.name;
  started.arguments = p.checked.ok() ? p.checked.arguments : json(call.arguments);
  started.turn = turn;
  started.index = static_cast<int64_t>(call.index);
  p.started = make_event(started);
  return p;
}

void Runner::execute_call(const PreparedCall& p, const Event& started) {
  const LoggedToolCall& call = p.call;
  auto t0 = std::chrono::steady_clock::now();
  ToolResult result;
  bool interrupted = false;
  if (!p.checked.ok()) {
    result.ok = false;
    result.output = p.checked.error;
  } else if (std::optional<LoggedResult> logged =
                 hooks_.logged_result ? hooks_.logged_result(p.turn, call.index, call.name)
                                      : std::nullopt) {
    if (logged->original_stopped) {
      // Left in flight, as the original left it; the next stop check ends the replay.
      replay_ended_ = fmt::format(
          "replay_exhausted: the logged run never finished tool call {} ({}): it stopped in it",
          call.id, call.name);
      return;
    }
    result = std::move(logged->result);
    interrupted = logged->finished.interrupted;
  } else {
    ToolContext ctx = tool_context(started.seq);
    Timer t(&stats_.tools_s);
    result = ToolRegistry::run(*p.checked.tool, p.checked.arguments, ctx);
    if (replay_ended_) return;  // the original stopped inside this call's confirmation
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ToolFinished fin = finished_payload(call.id, call.name, result, elapsed);
  fin.interrupted = interrupted;
  append_result(fin, started, result);
}

void Runner::run_call(const LoggedToolCall& call) {
  PreparedCall p = prepare_call(call, state_.turn.responses());
  Event started = append({p.started}).front();
  execute_call(p, started);
}

void Runner::recover_in_flight() {
  std::vector<InFlightTool> calls;
  for (const auto& [id, t] : state_.in_flight) calls.push_back(t);
  std::sort(calls.begin(), calls.end(), [](const InFlightTool& a, const InFlightTool& b) {
    return a.started_seq < b.started_seq;
  });
  for (const InFlightTool& t : calls) {
    auto it = std::find_if(events_.begin(), events_.end(),
                           [&](const Event& e) { return e.seq == t.started_seq; });
    Event started;  // (the log always holds it; a default keeps a damaged log from looping here)
    if (it != events_.end()) {
      started = *it;
    } else {
      for (Event& e : store_.read(t.started_seq, t.started_seq)) started = std::move(e);
    }
    Tool* tool = tools_.find(t.name);
    ToolResult result;
    bool rerun = tool && tool->idempotent() && t.arguments.is_object();
    auto t0 = std::chrono::steady_clock::now();
    if (rerun) {
      spdlog::info("resume: re-running `{}` ({}), in flight when the run stopped", t.name,
                   t.call_id);
      ToolContext ctx = tool_context(t.started_seq);
      result = ToolRegistry::run(*tool, t.arguments, ctx);
    } else {
      spdlog::info("resume: `{}` ({}) was in flight; reported to the model as interrupted", t.name,
                   t.call_id);
      result.ok = false;
      result.output = context::interrupted_tool_output(t.name);
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ToolFinished fin = finished_payload(t.call_id, t.name, result, elapsed);
    fin.interrupted = !rerun;
    append_result(fin, started, result);
  }
}

std::optional<RunReport> Runner::start_goal_turn() {
  int limit = state_.config.value("goal_auto_pause_turns", 5);
  if (limit > 0 && state_.goal.turns_without_progress >= limit) {
    std::string why =
        fmt::format("paused itself after {} turns without progress ({})", limit, best_text(state_));
    GoalChanged paused;
    paused.verb = GoalVerb::kAutoPause;
    paused.objective = state_.goal.objective;
    paused.status = GoalStatus::kPaused;
    paused.progress = why;
    append({make_event(paused), make_event(RunPaused{"goal_auto_paused", why})});
    return RunReport{RunOutcome::kPaused, "goal_auto_paused"};
  }
  BudgetUsed used = state_.used;
  used.wall_s = wall_s();
  append({user_message(UserMessage::kGoalTurn,
                       context::goal_turn_note(budget_line(state_.limits, used), best_text(state_),
                                               state_.evals_since_improvement))});
  return std::nullopt;
}

bool Runner::compact(context::Force force, bool cuts_only) {
  Timer t(&stats_.compaction_s);
  context::ContextIO io;
  io.append = [this](const NewEvent& e) { return append({e}).front(); };
  io.put_blob = [this](const std::string& bytes) { return store_.put_blob(bytes); };
  io.get_blob = [this](const std::string& sha) { return store_.get_blob(sha); };
  io.interrupted = hooks_.interrupted;
  bool appended = false;
  // A cut (a unit too large for the window) is followed, in the same step, by whatever the
  // regular stages then find to do.
  for (int round = 0; round < 2; ++round) {
    context::CompactionPlan plan = context::plan_compaction(*prompt_cache_, state_, events_, force);
    if (!plan.needed()) break;
    if (cuts_only && plan.action != context::CompactionPlan::Action::kCut) break;
    // run_compaction reads the state, the events and the cache only before its first append; the
    // appends update state_ and events_ (the cache reads them at its next update).
    context::CompactionResult r =
        context::run_compaction(*prompt_cache_, plan, state_, events_, summarise_, io);
    appended = appended || !r.appended.empty();
    if (plan.action != context::CompactionPlan::Action::kCut) break;
  }
  return appended;
}

int64_t Runner::fixed_prompt_tokens() {
  context::Layout layout = context::make_layout(state_, *prompt_cache_);
  layout.units = {};
  const CompactionLog& c = state_.compaction;
  return context::assemble(layout, {c.summary, c.summarized_through, c.elided_through},
                           context_config_, /*enforce_hard_cap=*/false)
      .tokens_estimate;
}

bool Runner::stop_or_note_due(const BudgetUsed& used) const {
  return decide_stop(state_, used, predicted_step(state_, events_),
                     hooks_.interrupted && hooks_.interrupted(), state_.stop_requested.has_value())
      .acts();
}

std::optional<RunReport> Runner::ask_policy() {
  // Planning reads the prompt cache (O(units), no walk over the log), so it runs every step. While
  // a request is pending (a runner stopped during the call) the same prompt is sent again, unless
  // it holds a unit too large for the window: that is cut first and the new prompt logged.
  const bool pending = state_.turn.request_pending();
  bool compacted = compact(context::Force::kNone, /*cuts_only=*/pending);
  context::Prompt prompt;
  {
    Timer t(&stats_.prompt_s);
    prompt = context::build_prompt(*prompt_cache_, state_, events_);
  }
  // The cache now holds what it needs of the events up to the installed summary point.
  context::drop_summarized_events(state_, events_);
  if (prompt.tokens_estimate > context_config_.hard_tokens()) {
    // Nothing is ever sent above the hard threshold: compact as hard as an overflow would, once.
    if (compact(context::Force::kOverHard, false)) {
      compacted = true;
      Timer t(&stats_.prompt_s);
      prompt = context::build_prompt(*prompt_cache_, state_, events_);
    }
    if (prompt.tokens_estimate > context_config_.hard_tokens()) {
      prompt_cache_->give_back(std::move(prompt.messages));
      std::string why = fmt::format(
          "the prompt is {} tokens (estimate) even after compaction, over the hard threshold of "
          "{} ({} x a {}-token window); of it the fixed part (system rules, task, tools, ledger "
          "and goal block), which no compaction shrinks, is {}; nothing was sent. Raise "
          "--context-window if the model has a larger one",
          prompt.tokens_estimate, context_config_.hard_tokens(), context_config_.hard_threshold,
          context_config_.context_window, fixed_prompt_tokens());
      append({make_event(RunPaused{"context_overflow", why})});
      return RunReport{RunOutcome::kFailed, "context_overflow"};
    }
  }
  if (!pending || compacted) {
    ModelRequest req;
    req.turn = state_.turn.goal_turn();
    req.prompt_sha = prompt.sha256;
    req.n_messages = static_cast<int64_t>(prompt.messages.size());
    req.tokens_estimate = prompt.tokens_raw;
    append({make_event(req)});
  }
  // Lent to the request, not copied, and taken back after the call.
  PolicyRequest request{
      std::move(prompt.messages),          std::move(tools_json_), &state_, hooks_.interrupted,
      std::move(prompt.cache_breakpoints), prompt.tokens_estimate};
  // A wall-time budget (0: none) bounds the call and its retries.
  if (state_.limits.max_wall_s > 0) {
    request.time_left_s = std::max(0.0, state_.limits.max_wall_s - wall_s());
  }
  PolicyReply reply;
  try {
    Timer t(&stats_.policy_s);
    reply = policy_.next(request);
  } catch (const std::exception& e) {
    reply = PolicyReply{};
    reply.error = ModelError::make(LlmErrorKind::kTransport, e.what());
  }
  tools_json_ = std::move(request.tools);
  // The next prompt extends these messages instead of copying every one again.
  prompt_cache_->give_back(std::move(request.messages));
  if (reply.error && reply.error->kind == LlmErrorKind::kInterrupted) {
    // A signal cut the call short: no response is logged, the request stays pending (resume sends
    // it again) and the next iteration pauses the run.
    spdlog::info("model call interrupted; pausing");
    return std::nullopt;
  }
  ModelResponse response = response_payload(reply);
  response.message = normalise_assistant_message(reply.message, state_.turns);
  // The response, preceded by a warning when its usage is the runtime's estimate.
  std::vector<NewEvent> batch;
  if (reply.usage_rejected) {
    LlmUsageRejected w = *reply.usage_rejected;
    w.provider = reply.provider;
    w.model = reply.model;
    batch.push_back(make_event(w));
  }
  batch.push_back(make_event(response));
  if (!reply.error) {
    // The response and its first call's tool.started go in one transaction (one fsync): both must
    // be durable before the call acts, and nothing else is decided between them unless a stop or
    // a budget note is due after this response (then the call waits for the next iteration, as
    // the other calls of the turn do).
    std::vector<LoggedToolCall> calls = tool_calls_of(response.message);
    sync();
    BudgetUsed used = state_.used;
    used.model_calls += 1;
    add_model_spend(used, static_cast<double>(reply.prompt_tokens),
                    static_cast<double>(reply.completion_tokens), reply.cost_usd);
    used.wall_s = wall_s();
    if (hooks_.shared_budget) used = hooks_.shared_budget(used);
    if (calls.empty() || stop_or_note_due(used)) {
      append(std::move(batch));
      return std::nullopt;
    }
    PreparedCall first = prepare_call(calls.front(), state_.turn.responses() + 1);
    batch.push_back(first.started);
    std::vector<Event> stored = append(std::move(batch));
    execute_call(first, stored.back());
    return std::nullopt;
  }
  append(std::move(batch));

  const ModelError& error = *response.error;
  const std::string& kind = error.kind_text;
  const std::string& message = error.message;
  spdlog::warn("model call failed ({}): {}", kind, message);
  if (error.kind == LlmErrorKind::kContextLength) {
    // The server's window is smaller than the prompt: compact as after an overflow and ask again;
    // when that frees nothing the prompt cannot shrink, and asking again would only repeat it.
    const size_t before = events_.size();
    compact(context::Force::kOverflow, false);
    bool freed = false;
    for (size_t i = before; i < events_.size(); ++i) freed = freed || shrank_prompt(events_[i]);
    if (freed) return std::nullopt;  // the next iteration asks again with the compacted prompt
    std::string why = fmt::format(
        "the model refused the prompt as longer than its context window and compaction can free "
        "nothing more: the prompt is about {} tokens (estimate), of which the fixed part (system "
        "rules, task, tools, ledger and goal block) is {}; --context-window is {}. Set "
        "--context-window to the server's window or use a model with a larger one. The server "
        "said: {}",
        context::build_prompt(*prompt_cache_, state_, events_).tokens_estimate,
        fixed_prompt_tokens(), context_config_.context_window, message);
    append({make_event(RunPaused{"context_too_small", why})});
    return RunReport{RunOutcome::kFailed, "context_too_small"};
  }
  if (is_permanent(error.kind)) {
    append({make_event(RunPaused{"model_error", kind + ": " + message})});
    return RunReport{RunOutcome::kFailed, "model_error"};
  }
  if (state_.turn.consecutive_model_errors() >= kMaxConsecutiveModelErrors) {
    append({make_event(
        RunPaused{"model_unavailable", fmt::format("{} model calls failed in a row; last: {}: {}",
                                                   kMaxConsecutiveModelErrors, kind, message)})});
    return RunReport{RunOutcome::kFailed, "model_unavailable"};
  }
  if (error.kind == LlmErrorKind::kMalformed) {
    append({user_message(UserMessage::kModelError, context::unusable_reply_note(message))});
  }
  return std::nullopt;
}

RunReport Runner::run() {
  while (true) {
    if (hooks_.between_steps) hooks_.between_steps();
    sync();
    bool stepped = false;
    if (std::optional<RunReport> stop = check_stops(&stepped)) return *stop;
    if (stepped) continue;
    if (!state_.in_flight.empty()) {
      recover_in_flight();
      continue;
    }
    std::vector<LoggedToolCall> calls = state_.turn.unfinished_calls();
    if (!calls.empty()) {
      run_call(calls.front());
      continue;
    }
    if (state_.turn.goal_turn_due()) {
      if (std::optional<RunReport> r = start_goal_turn()) return *r;
      continue;
    }
    if (std::optional<RunReport> r = ask_policy()) return *r;
  }
}

}  // namespace marathon
