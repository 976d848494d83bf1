#include "loop/runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "context/compaction.h"
#include "context/prompt_builder.h"
#include "context/transcript.h"
#include "core/checkpoint.h"
#include "core/fold.h"
#include "goal/budget.h"
#include "loop/tool_call_log.h"
#include "tools/json_schema.h"

namespace marathon {

namespace {

using context::kUserMessage;
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

std::string interrupted_message(const std::string& tool) {
  return fmt::format(
      "interrupted: the runner stopped while `{}` was running and it was not re-run on resume "
      "(it is not idempotent). Its effects, if any, are unknown: check before you retry it.",
      tool);
}

// model.response usage: the token counts, and the prompt-cache parts of prompt_tokens when any.
json usage_payload(const PolicyReply& reply) {
  json u = {{"prompt_tokens", reply.prompt_tokens}, {"completion_tokens", reply.completion_tokens}};
  if (reply.cache_read_tokens > 0) u["cache_read_tokens"] = reply.cache_read_tokens;
  if (reply.cache_write_tokens > 0) u["cache_write_tokens"] = reply.cache_write_tokens;
  return u;
}

// What the next step is predicted to add to the budget use: the mean of the model calls so far or
// the last one's spend, whichever is larger (a step is a model call and the tool calls it makes).
BudgetUsed predicted_step(const State& s, const std::vector<Event>& events) {
  BudgetUsed next;
  const int64_t n = s.used.model_calls;
  if (n <= 0) return next;
  const double calls = static_cast<double>(n);
  next.prompt_tokens = s.used.prompt_tokens / n;
  next.completion_tokens = s.used.completion_tokens / n;
  next.cost_usd = s.used.cost_usd / calls;
  next.tool_calls = (s.used.tool_calls + n - 1) / n;
  next.wall_s = s.used.wall_s / calls;
  next.gpu_s = s.used.gpu_s / calls;
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->type != ev::kModelResponse) continue;
    const json& p = it->payload;
    if (auto u = p.find("usage"); u != p.end() && u->is_object()) {
      auto count = [&](const char* key) {
        auto v = u->find(key);
        return v != u->end() && v->is_number() ? std::max(0.0, v->get<double>()) : 0.0;
      };
      next.prompt_tokens = std::max(next.prompt_tokens, int64_t(count("prompt_tokens")));
      next.completion_tokens =
          std::max(next.completion_tokens, int64_t(count("completion_tokens")));
    }
    if (auto c = p.find("cost_usd"); c != p.end() && c->is_number()) {
      next.cost_usd = std::max(next.cost_usd, c->get<double>());
    }
    if (auto m = p.find("message"); m != p.end() && m->is_object()) {
      next.tool_calls =
          std::max<int64_t>(next.tool_calls, static_cast<int64_t>(tool_calls_of(*m).size()));
    }
    break;
  }
  return next;
}

// Budgets to send the wrap-up note for now: those at 90% and those the next step is predicted to
// take past it (however far it would jump), each once.
std::vector<BudgetItem> budgets_due_a_note(const State& s, const BudgetUsed& used,
                                           const std::vector<Event>& events) {
  std::vector<BudgetItem> out = budgets_to_warn(s.limits, used, s.budget_warnings);
  for (const BudgetItem& b :
       budgets_predicted_to_cross(s.limits, used, predicted_step(s, events), s.budget_warnings)) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const BudgetItem& o) { return o.which == b.which; })) {
      out.push_back(b);
    }
  }
  return out;
}

bool target_met(const State& s) {
  if (!s.goal.target || !s.best_score) return false;
  return s.goal.direction == "min" ? *s.best_score <= *s.goal.target
                                   : *s.best_score >= *s.goal.target;
}

std::string best_text(const State& s) {
  if (!s.best_score) return "no correct evaluation yet";
  return fmt::format("best {} {:.4g} (candidate {})", s.goal.metric, *s.best_score,
                     s.best_candidate.substr(0, 12));
}

}  // namespace

ToolResult run_tool_safely(Tool& tool, const json& args, ToolContext& ctx) {
  try {
    return tool.run(args, ctx);
  } catch (const std::exception& e) {
    ToolResult r;
    r.ok = false;
    r.output = fmt::format("{} failed: {}", tool.name(), e.what());
    return r;
  }
}

Runner::Runner(EventStore& store, Policy& policy, ToolRegistry& tools,
               std::filesystem::path run_dir, RunnerHooks hooks)
    : store_(store),
      policy_(policy),
      tools_(tools),
      run_dir_(std::move(run_dir)),
      hooks_(std::move(hooks)) {
  if (!hooks_.now_us) hooks_.now_us = system_now_us;
  for (Event& e : store_.read()) {
    apply(state_, e);
    turns_.apply(e);
    note_stop_request(e);
    events_.push_back(std::move(e));
  }
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

void Runner::note_stop_request(const Event& e) {
  if (e.type == ev::kRunStopRequested) {
    auto reason = e.payload.find("reason");
    stop_requested_ = reason != e.payload.end() && reason->is_string() ? reason->get<std::string>()
                                                                       : std::string();
  } else if (e.type == ev::kRunResumed) {
    stop_requested_.reset();  // asked of an earlier session
  }
}

void Runner::observe(const Event& e) {
  apply(state_, e);
  turns_.apply(e);
  note_stop_request(e);
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

ToolContext Runner::tool_context() { return marathon::tool_context(store_, &state_, run_dir_); }

std::optional<RunReport> Runner::check_stops() {
  if (state_.done) return RunReport{RunOutcome::kFinished, state_.finish_reason};
  auto pause = [this](const std::string& reason, const std::string& message) {
    append({{ev::kRunPaused, {{"reason", reason}, {"message", message}}}});
    return RunReport{RunOutcome::kPaused, reason};
  };
  auto finish = [this](const std::string& reason, const std::string& summary) {
    // Calls of the last turn that will now never run are answered as not run (and use nothing),
    // so the log and the transcript never hold a call that looks pending or lost.
    std::vector<NewEvent> batch;
    for (const LoggedToolCall& call : turns_.unfinished_calls()) {
      batch.push_back({ev::kToolFinished,
                       {{"call_id", call.id},
                        {"name", call.name},
                        {"ok", false},
                        {"not_run", true},
                        {"output", fmt::format("not run: the run ended before this call ({}: {})",
                                               reason, summary)},
                        {"elapsed_s", 0.0}}});
    }
    batch.push_back({ev::kRunFinished, {{"reason", reason}, {"summary", summary}}});
    append(std::move(batch));
    return RunReport{RunOutcome::kFinished, reason};
  };
  if (hooks_.interrupted && hooks_.interrupted()) {
    return pause("interrupted", "stopped by SIGINT or SIGTERM; `marathon resume` carries on");
  }
  if (stop_requested_) {
    return pause("stopped",
                 fmt::format("stopped on request ({}); `marathon resume` carries on",
                             stop_requested_->empty() ? "no reason given" : *stop_requested_));
  }
  if (state_.goal.status == "paused") {
    return pause("goal_paused",
                 "the goal is paused; `marathon goal resume` then `marathon resume`");
  }
  if (state_.goal.status == "cleared") return finish("goal_cleared", "the goal was cleared");
  if (target_met(state_)) {
    return finish("target",
                  fmt::format("target {:.4g} reached: {}", *state_.goal.target, best_text(state_)));
  }
  BudgetUsed used = state_.used;
  used.wall_s = wall_s();
  if (auto over = exhausted_budget(state_.limits, used)) {
    return finish("budget", fmt::format("{} budget used up ({:.6g} of {:.6g}); {}", over->which,
                                        over->used, over->limit, best_text(state_)));
  }
  std::vector<NewEvent> warnings;
  for (const BudgetItem& b : budgets_due_a_note(state_, used, events_)) {
    const bool predicted = !b.near && !b.over;
    json warned = {{"which", b.which}, {"used", b.used}, {"limit", b.limit}};
    if (predicted) warned["predicted"] = true;
    warnings.push_back({ev::kBudgetWarned, std::move(warned)});
    warnings.push_back(
        {kUserMessage,
         {{"reason", "budget"},
          {"content",
           fmt::format("Budget note: {} is at {:.0f}% of its limit{} ({}). Wrap up: "
                       "evaluate your best idea, note what you learned, and call "
                       "`finish` with a summary before the run is stopped.",
                       b.which, 100 * b.fraction(),
                       predicted ? ", and the next step is predicted to take it past 90%" : "",
                       budget_line(state_.limits, used))}}});
  }
  if (!warnings.empty()) append(std::move(warnings));
  return std::nullopt;
}

std::string Runner::effective_tool_error(const LoggedToolCall& call, json* args) {
  const Tool* tool = tools_.find(call.name);
  if (!tool) {
    std::string valid;
    for (const std::string& n : tools_.names()) valid += (valid.empty() ? "" : ", ") + n;
    return fmt::format("error: unknown tool \"{}\"; the tools are: {}", call.name, valid);
  }
  std::string error;
  std::optional<json> parsed = parse_tool_arguments(call.name, call.arguments, &error);
  if (!parsed) return "error: " + error;
  *args = std::move(*parsed);
  std::vector<std::string> problems = validate_schema(*args, tool->parameters());
  if (!problems.empty()) {
    std::string out = fmt::format("error: invalid arguments for `{}`:", call.name);
    for (const std::string& p : problems) out += "\n- " + p;
    return out + "\nexpected schema: " + tool->parameters().dump();
  }
  return "";
}

Runner::PreparedCall Runner::prepare_call(const LoggedToolCall& call, int64_t turn) {
  PreparedCall p;
  p.call = call;
  p.args = json::object();
  p.error = effective_tool_error(call, &p.args);
  p.turn = turn;
  p.started = {ev::kToolStarted,
               {{"call_id", call.id},
                {"name", call.name},
                {"arguments", p.error.empty() ? p.args : json(call.arguments)},
                {"turn", turn},
                {"index", call.index}}};
  return p;
}

void Runner::execute_call(const PreparedCall& p, const Event& started) {
  const LoggedToolCall& call = p.call;
  auto t0 = std::chrono::steady_clock::now();
  ToolResult result;
  json extra = json::object();
  if (!p.error.empty()) {
    result.ok = false;
    result.output = p.error;
  } else if (std::optional<LoggedResult> logged =
                 hooks_.logged_result ? hooks_.logged_result(p.turn, call.index, call.name)
                                      : std::nullopt) {
    result = std::move(logged->result);
    if (logged->finished_payload.value("interrupted", false)) extra["interrupted"] = true;
  } else {
    ToolContext ctx = tool_context();
    Timer t(&stats_.tools_s);
    result = run_tool_safely(*tools_.find(call.name), p.args, ctx);
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  NewEvent fin = tool_finished_event(started, call.id, call.name, result, elapsed);
  for (auto& [k, v] : extra.items()) fin.payload[k] = v;
  append(with_effects(std::move(fin), started, result));
}

void Runner::run_call(const LoggedToolCall& call) {
  PreparedCall p = prepare_call(call, turns_.responses());
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
    if (it != events_.end()) started = *it;
    Tool* tool = tools_.find(t.name);
    ToolResult result;
    bool rerun = tool && tool->idempotent() && t.arguments.is_object();
    auto t0 = std::chrono::steady_clock::now();
    if (rerun) {
      spdlog::info("resume: re-running `{}` ({}), in flight when the run stopped", t.name,
                   t.call_id);
      ToolContext ctx = tool_context();
      result = run_tool_safely(*tool, t.arguments, ctx);
    } else {
      spdlog::info("resume: `{}` ({}) was in flight; reported to the model as interrupted", t.name,
                   t.call_id);
      result.ok = false;
      result.output = interrupted_message(t.name);
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    NewEvent fin = tool_finished_event(started, t.call_id, t.name, result, elapsed);
    if (!rerun) fin.payload["interrupted"] = true;
    append(with_effects(std::move(fin), started, result));
  }
}

std::optional<RunReport> Runner::start_goal_turn() {
  int limit = state_.config.value("goal_auto_pause_turns", 5);
  if (limit > 0 && state_.goal.turns_without_progress >= limit) {
    std::string why =
        fmt::format("paused itself after {} turns without progress ({})", limit, best_text(state_));
    append({{ev::kGoalChanged,
             {{"verb", "auto_pause"},
              {"objective", state_.goal.objective},
              {"status", "paused"},
              {"progress", why}}},
            {ev::kRunPaused, {{"reason", "goal_auto_paused"}, {"message", why}}}});
    return RunReport{RunOutcome::kPaused, "goal_auto_paused"};
  }
  BudgetUsed used = state_.used;
  used.wall_s = wall_s();
  std::string text = fmt::format(
      "You stopped without calling `finish`, but the goal is still open and budget remains "
      "({}). Progress so far: {}; {} evaluation(s) since the last improvement. Keep working "
      "toward the goal: try the next idea, evaluate it, note what you learn. Call `finish` "
      "with a summary only when you are done.",
      budget_line(state_.limits, used), best_text(state_), state_.evals_since_improvement);
  append({{kUserMessage, {{"reason", "goal_turn"}, {"content", text}}}});
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
        context::run_compaction(*prompt_cache_, plan, state_, events_, &policy_, io);
    appended = appended || !r.appended.empty();
    if (plan.action != context::CompactionPlan::Action::kCut) break;
  }
  return appended;
}

int64_t Runner::fixed_prompt_tokens() {
  context::Layout layout = context::make_layout(state_, *prompt_cache_);
  layout.units = {};
  const context::CompactionLog& c = prompt_cache_->compaction_log();
  return context::assemble(layout, {c.summary, c.summarized_through, c.elided_through},
                           context_config_, /*enforce_hard_cap=*/false)
      .tokens_estimate;
}

bool Runner::stop_or_note_due(const BudgetUsed& used) const {
  // What check_stops() would act on, with `used` as the budget use.
  if (state_.done) return true;
  if (hooks_.interrupted && hooks_.interrupted()) return true;
  if (stop_requested_) return true;
  if (state_.goal.status == "paused" || state_.goal.status == "cleared") return true;
  if (target_met(state_)) return true;
  if (exhausted_budget(state_.limits, used)) return true;
  return !budgets_due_a_note(state_, used, events_).empty();
}

std::optional<RunReport> Runner::ask_policy() {
  // Planning reads the prompt cache (O(units), no walk over the log), so it runs every step. While
  // a request is pending (a runner stopped during the call) the same prompt is sent again, unless
  // it holds a unit too large for the window: that is cut first and the new prompt logged.
  const bool pending = turns_.request_pending();
  bool compacted = compact(context::Force::kNone, /*cuts_only=*/pending);
  context::Prompt prompt;
  {
    Timer t(&stats_.prompt_s);
    prompt = context::build_prompt(*prompt_cache_, state_, events_);
  }
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
      append({{ev::kRunPaused, {{"reason", "context_overflow"}, {"message", why}}}});
      return RunReport{RunOutcome::kFailed, "context_overflow"};
    }
  }
  if (!pending || compacted) {
    append({{ev::kModelRequest,
             {{"turn", turns_.goal_turn()},
              {"prompt_sha", prompt.sha256},
              {"n_messages", prompt.messages.size()},
              {"tokens_estimate", prompt.tokens_raw}}}});
  }
  // Lent to the request, not copied, and taken back after the call.
  PolicyRequest request{
      std::move(prompt.messages),          std::move(tools_json_), &state_, hooks_.interrupted,
      std::move(prompt.cache_breakpoints), prompt.tokens_estimate};
  PolicyReply reply;
  try {
    Timer t(&stats_.policy_s);
    reply = policy_.next(request);
  } catch (const std::exception& e) {
    reply = PolicyReply{};
    reply.error = json{{"kind", "transport"}, {"message", e.what()}};
  }
  tools_json_ = std::move(request.tools);
  // The next prompt extends these messages instead of copying every one again.
  prompt_cache_->give_back(std::move(request.messages));
  if (reply.error && reply.error->value("kind", "") == "interrupted") {
    // A signal cut the call short: no response is logged, the request stays pending (resume sends
    // it again) and the next iteration pauses the run.
    spdlog::info("model call interrupted; pausing");
    return std::nullopt;
  }
  json payload = {{"message", normalise_assistant_message(reply.message, state_.turns)},
                  {"usage", usage_payload(reply)},
                  {"cost_usd", reply.cost_usd},
                  {"provider", reply.provider},
                  {"model", reply.model},
                  {"finish_reason", reply.finish_reason}};
  if (reply.error) payload["error"] = *reply.error;
  if (reply.problems.is_array() && !reply.problems.empty()) payload["problems"] = reply.problems;
  // The response, preceded by a warning when its usage is the runtime's estimate.
  std::vector<NewEvent> batch;
  if (reply.usage_rejected) {
    payload["usage_estimated"] = true;
    json w = *reply.usage_rejected;
    w["provider"] = reply.provider;
    w["model"] = reply.model;
    batch.push_back({ev::kLlmUsageRejected, std::move(w)});
  }
  batch.push_back({ev::kModelResponse, payload});
  if (!reply.error) {
    context_retry_used_ = false;
    // The response and its first call's tool.started go in one transaction (one fsync): both must
    // be durable before the call acts, and nothing else is decided between them unless a stop or
    // a budget note is due after this response (then the call waits for the next iteration, as
    // the other calls of the turn do).
    std::vector<LoggedToolCall> calls = tool_calls_of(payload["message"]);
    sync();
    BudgetUsed used = state_.used;
    used.model_calls += 1;
    add_model_spend(used, static_cast<double>(reply.prompt_tokens),
                    static_cast<double>(reply.completion_tokens), reply.cost_usd);
    used.wall_s = wall_s();
    if (calls.empty() || stop_or_note_due(used)) {
      append(std::move(batch));
      return std::nullopt;
    }
    PreparedCall first = prepare_call(calls.front(), turns_.responses() + 1);
    batch.push_back(first.started);
    std::vector<Event> stored = append(std::move(batch));
    execute_call(first, stored.back());
    return std::nullopt;
  }
  append(std::move(batch));

  std::string kind = reply.error->value("kind", "unknown");
  std::string message = reply.error->value("message", "");
  spdlog::warn("model call failed ({}): {}", kind, message);
  if (kind == "context_length") {
    // The server's window is smaller than the prompt: compact as after an overflow and ask again;
    // when that frees nothing the prompt cannot shrink, and asking again would only repeat it.
    context_retry_used_ = true;
    const size_t before = events_.size();
    compact(context::Force::kOverflow, false);
    bool freed = false;
    for (size_t i = before; i < events_.size(); ++i) {
      const Event& e = events_[i];
      freed = freed || (e.type.rfind("compaction.", 0) == 0 &&
                        e.payload.value("outcome", "") == "compacted");
    }
    if (freed) return std::nullopt;  // the next iteration asks again with the compacted prompt
    std::string why = fmt::format(
        "the model refused the prompt as longer than its context window and compaction can free "
        "nothing more: the prompt is about {} tokens (estimate), of which the fixed part (system "
        "rules, task, tools, ledger and goal block) is {}; --context-window is {}. Set "
        "--context-window to the server's window or use a model with a larger one. The server "
        "said: {}",
        context::build_prompt(*prompt_cache_, state_, events_).tokens_estimate,
        fixed_prompt_tokens(), context_config_.context_window, message);
    append({{ev::kRunPaused, {{"reason", "context_too_small"}, {"message", why}}}});
    return RunReport{RunOutcome::kFailed, "context_too_small"};
  }
  if (kind == "auth" || kind == "not_found" || kind == "bad_request" ||
      kind == "replay_exhausted") {
    append({{ev::kRunPaused, {{"reason", "model_error"}, {"message", kind + ": " + message}}}});
    return RunReport{RunOutcome::kFailed, "model_error"};
  }
  if (turns_.consecutive_model_errors() >= kMaxConsecutiveModelErrors) {
    append({{ev::kRunPaused,
             {{"reason", "model_unavailable"},
              {"message", fmt::format("{} model calls failed in a row; last: {}: {}",
                                      kMaxConsecutiveModelErrors, kind, message)}}}});
    return RunReport{RunOutcome::kFailed, "model_unavailable"};
  }
  if (kind == "malformed") {
    append({{kUserMessage,
             {{"reason", "model_error"},
              {"content", fmt::format("Your previous reply could not be used ({}). Reply again: "
                                      "text and/or tool calls with JSON arguments.",
                                      message)}}}});
  }
  return std::nullopt;
}

RunReport Runner::run() {
  while (true) {
    if (hooks_.between_steps) hooks_.between_steps();
    sync();
    if (std::optional<RunReport> stop = check_stops()) return *stop;
    if (!state_.in_flight.empty()) {
      recover_in_flight();
      continue;
    }
    std::vector<LoggedToolCall> calls = turns_.unfinished_calls();
    if (!calls.empty()) {
      run_call(calls.front());
      continue;
    }
    if (turns_.goal_turn_due()) {
      if (std::optional<RunReport> r = start_goal_turn()) return *r;
      continue;
    }
    if (std::optional<RunReport> r = ask_policy()) return *r;
  }
}

}  // namespace marathon
