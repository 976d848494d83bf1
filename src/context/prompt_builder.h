// PromptBuilder: the request the loop sends, as a pure function of (State, events, config); the
// loop keeps a PromptCache (prompt_cache.h) between steps, which changes the cost, not the bytes.
// The same state and log give the same bytes (no clock, no randomness, no map-order surprises), so
// a resumed run sends exactly the prompt the uninterrupted one would have.
//
// Layout of `messages`, ordered so that what changes most often comes last: providers cache a
// prompt's longest prefix shared with an earlier request, and everything before the tail is
// byte-stable from step to step until a compaction changes it.
//   [0] system: the rules; constant for the run
//   [1] user:   the task (its description and files), then the installed summary (if any);
//               changes only when a compaction installs a summary
//   [2..n-2] the recent turns after the summary (transcript.h), whole units only, append-only
//         between compactions; tool outputs at or before the elision point become
//         `[output elided: recall(seq=N)]`
//   [n-1] user: the live tail: the ledger view, the goal block (budget figures, best score) and,
//         when units were left out, a note saying so; rebuilt every request. Left out while the
//         newest unit is a turn the provider paused (Unit::paused_turn): that assistant message
//         then ends the prompt, as it is, and the model carries on from it
// If the result would still exceed the hard threshold, the oldest units are left out (counted in
// the tail) and oversized outputs are cut, so no request is ever sent above hard * window.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "context/context_config.h"
#include "context/prompt_cache.h"
#include "core/state.h"

namespace marathon::context {

struct Prompt {
  json messages = json::array();
  std::string sha256;           // sha256 of messages.dump() (model.request prompt_sha)
  int64_t tokens_raw = 0;       // raw estimate (log this as model.request tokens_estimate)
  int64_t tokens_estimate = 0;  // calibrated estimate (what thresholds compare against)
  double ratio = 1.0;           // calibration ratio used
  int64_t units_total = 0;      // units after the summary
  int64_t units_omitted = 0;    // of those, left out to fit the hard threshold
  int64_t summarized_through = 0;
  int64_t elided_through = 0;
  // Indices of the messages after which a provider cache breakpoint goes (Anthropic's
  // cache_control; at most 4): the system message, the task message (end of the stable prefix),
  // the end of the previous step's transcript and the end of this one's (before the live tail).
  std::vector<int64_t> cache_breakpoints;
};

// The prompt for the next model request, with the log's compaction state. The cache is brought up
// to `events` first (only the new events are read); `state` is the fold of `events`.
Prompt build_prompt(PromptCache& cache, const State& state, const std::vector<Event>& events);

// The same from scratch (a fresh cache): what a process that has just opened the log builds.
Prompt build_prompt(const State& state, const std::vector<Event>& events,
                    const ContextConfig& config, const json& tools = json::array());

// --- lower level, shared with compaction planning ---------------------------------------------

// What compaction can change: the summary and the two cut points.
struct ContextView {
  std::string summary;
  int64_t summarized_through = 0;
  int64_t elided_through = 0;
};

struct Layout {
  std::string rules;                    // system rules (the system message)
  std::string goal;                     // goal block (in the live tail)
  std::string ledger;                   // ledger view (in the live tail)
  json kickoff;                         // the task message, without the summary
  std::span<const PreparedUnit> units;  // units after the summary point (owned by a PromptCache)
  double ratio = 1.0;
  int64_t tools_tokens = 0;
  // Raw token estimates of the parts (a message's estimate is the sum of its parts': they are
  // joined by blank lines, and an estimate never spans a newline).
  int64_t rules_tokens = 0;
  int64_t goal_tokens = 0;
  int64_t ledger_tokens = 0;
  int64_t kickoff_tokens = 0;            // the whole task message
  const std::string* summary = nullptr;  // the installed summary and its estimate
  int64_t summary_tokens = 0;
};

// The layout with the cache's units (after its installed summary point). The cache must be up to
// date (PromptCache::update).
Layout make_layout(const State& state, PromptCache& cache);

// The counts of a prompt from a layout and a view (no messages: what compaction planning needs and
// what build_prompt fills the messages in from). With enforce_hard_cap the oldest units are left
// out to fit (units_omitted of them).
Prompt assemble(const Layout& layout, const ContextView& view, const ContextConfig& config,
                bool enforce_hard_cap);

std::string system_rules(const State& state);
std::string task_message(const State& state);

}  // namespace marathon::context
