// Compaction: keeping a long run inside the model's context window, in two stages, each an event,
// and a cut for a single message too large for the window.
//
//   cut      compaction.cut        a unit (an assistant reply with its tool results) that alone
//                                  does not fit the window: its largest text fields (the reply, a
//                                  call's arguments, a tool output) shown as a head and a tail with
//                                  a note; recall(seq=N) pages through the whole from the log
//   stage 1  compaction.elided     old tool outputs become `[output elided: recall(seq=N)]`
//   stage 2  model.response{purpose: "compaction"}   the summariser's answer (counted in budgets)
//            compaction.proposed                     its text stored as a blob, not yet trusted
//            compaction.installed                    validated summary (or a structural one built
//                                                    from state when the model's is empty, too long
//                                                    or failed); outcome compacted|noop|failed
//
// How the loop uses it, once per step before building the request, with one PromptCache kept for
// the run (prompt_cache.h; each call reads only the events appended since the previous one):
//
//   context::PromptCache cache(cfg, tools);
//   context::Summariser summarise = summariser_of(policy, &state);   // policy/policy.h
//   auto plan = context::plan_compaction(cache, state, events);
//   if (plan.needed()) context::run_compaction(cache, plan, state, events, summarise, io);
//   auto prompt = context::build_prompt(cache, state, events);       // prompt_builder.h
//   ... append model.request{prompt_sha: prompt.sha256, tokens_estimate: prompt.tokens_raw} ...
//   if (the reply's error is a context-length error) {                // once per step
//     auto p2 = context::plan_compaction(cache, state, events, context::Force::kOverflow);
//     context::run_compaction(cache, p2, state, events, summarise, io);
//     rebuild the prompt and retry the request once
//   }
//
// `io.append` must append the event to the store AND apply it to the loop's state and event list
// (run_compaction reads `state`/`events` only before its first append). Every event it appends is
// also returned. The compaction.installed event is a single append, so a kill leaves either the
// whole summary or none in the log; a kill between the stages is finished on resume by the next
// plan (a logged summariser answer or proposal is reused: no model call is repeated).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "context/context_config.h"
#include "context/prompt_builder.h"
#include "context/summariser.h"
#include "core/compaction_log.h"
#include "core/state.h"

namespace marathon::context {

enum class Force {
  kNone,      // compact only above the soft threshold (or on a manual request in the log)
  kManual,    // as if `marathon compact` had asked
  kOverflow,  // the provider said the prompt was too long: compact harder, now
  kOverHard,  // the prompt as built is above the hard threshold: as kOverflow, before sending
};

struct CompactionPlan {
  enum class Action {
    kNone,            // nothing to do
    kElide,           // stage 1 only
    kSummarise,       // stage 1 (if it frees anything) then stage 2
    kFinishResponse,  // a logged summariser answer was never proposed: propose + install it
    kFinishProposal,  // a logged proposal was never installed: validate + install it
    kNoop,            // asked or over the threshold, but nothing can be freed: record it once
    kCut,             // a unit too large for the window on its own: cut its largest fields
  };
  Action action = Action::kNone;
  std::string trigger = "auto";  // auto | manual
  // soft_threshold | manual_request | context_length_error | over_hard_threshold | resume |
  // unit_over_window
  std::string reason;
  int64_t tokens_before = 0;      // calibrated estimate of the prompt as it stands
  int64_t elide_through = 0;      // new elision point (> current when stage 1 frees something)
  int64_t summarize_through = 0;  // new summary point (stage 2)
  // kCut: the events whose messages are cut and the tokens each text field keeps, the units they
  // are in, and the calibrated prompt estimate once they are cut (without the hard cap).
  using Cut = events::CompactionCut::Cut;  // bytes: the fields over max_tokens, before the cut
  std::vector<Cut> cuts;
  std::vector<int64_t> cut_units;  // first_seq of each unit cut
  int64_t tokens_after = 0;
  bool needed() const { return action != Action::kNone; }
};

struct ContextIO {
  std::function<Event(const NewEvent&)> append;  // append + apply to the caller's state/events
  std::function<std::string(const std::string& bytes)> put_blob;  // returns sha256
  std::function<std::optional<std::string>(const std::string& sha)> get_blob;
  // Passed to the summariser's request (SummaryRequest::interrupted): a summary call cut short by
  // it is not logged and the compaction is left for the next plan.
  std::function<bool()> interrupted;
};

struct CompactionResult {
  std::vector<Event> appended;
  std::string outcome;  // compacted | noop | failed | interrupted | "" (nothing done)
  std::string source;   // cut | elision | model | structural | none
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;
};

// With the loop's cache (prompt_cache.h): brought up to `events`, then read (cost O(units)).
CompactionPlan plan_compaction(PromptCache& cache, const State& state,
                               const std::vector<Event>& events, Force force = Force::kNone);

// The same from scratch (a fresh cache).
CompactionPlan plan_compaction(const State& state, const std::vector<Event>& events,
                               const ContextConfig& config, const json& tools = json::array(),
                               Force force = Force::kNone);

// Runs a plan. `summariser` may be empty (structural summary only, e.g. `marathon compact --now`).
// Never throws for a summariser failure (it becomes the structural fallback); an append failure
// propagates (the log is the source of truth and the caller must stop).
CompactionResult run_compaction(PromptCache& cache, const CompactionPlan& plan, const State& state,
                                const std::vector<Event>& events, const Summariser& summariser,
                                const ContextIO& io);

// The same from scratch (a fresh cache).
CompactionResult run_compaction(const CompactionPlan& plan, const State& state,
                                const std::vector<Event>& events, const ContextConfig& config,
                                const Summariser& summariser, const ContextIO& io,
                                const json& tools = json::array());

// The calibrated tokens a unit may take so that it and the fixed part of the prompt (system, task
// message, tools) stay within the hard threshold. A unit above it is cut before it is sent.
int64_t unit_budget_tokens(const Layout& layout, const ContextView& view,
                           const ContextConfig& config);

// --- pure pieces, exposed for tests -----------------------------------------------------------

// The request sent to the summariser: the previous summary and the turns (after, through].
SummaryRequest summary_request(const std::vector<Event>& events, const ContextConfig& config,
                               const std::string& previous_summary, int64_t after_seq,
                               int64_t through_seq, int64_t elided_through);

// Why a summary is not acceptable ("" when it is): empty, too short, over max_summary.
std::string validate_summary(const std::string& text, const ContextConfig& config);

// A summary built by the runtime from state and the turns being summarised (never empty).
std::string structural_summary(const State& state, const std::vector<Event>& events,
                               const ContextConfig& config, const std::string& previous_summary,
                               int64_t after_seq, int64_t through_seq, const std::string& why);

}  // namespace marathon::context
