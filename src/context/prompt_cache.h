// PromptCache: what prompt assembly and compaction planning read from the log, kept between steps
// so that a step costs O(new events) instead of a walk over the whole log:
//   - the compaction state (compaction_log.h) and the token calibration (token_estimate.h), folded
//     event by event;
//   - the units after the installed summary point (transcript.h), each message prepared once: its
//     token estimate, the per-output cap and any logged cut (compaction.cut) applied, its JSON text
//     as sent, and its elided form. A cut logged after a unit was prepared prepares it again.
// A cache holds one log: update() reads only the events after those it saw last time (found by
// seq, so the list it is given may lack a prefix it has read: drop_summarized_events), and starts
// over when the log it is given does not extend that one. Everything it returns is what a fresh
// cache built from the same log returns (tests/context/incremental_prompt_test.cc checks it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "context/context_config.h"
#include "context/ledger_view.h"
#include "context/token_estimate.h"
#include "context/transcript.h"
#include "core/compaction_log.h"
#include "core/state.h"

namespace marathon::context {

// `[output elided: recall(seq=N)]`: what an elided tool output is shown as.
std::string elision_pointer(int64_t seq);

// The smallest max_tokens a cut uses: room for the note and a little of each end.
inline constexpr int64_t kMinCutTokens = 128;

// `text` cut to a head and a tail with a note between them saying how many bytes there were, which
// were left out and that recall(seq=`seq`) pages through the whole; the result estimates at most
// max(max_tokens, kMinCutTokens) tokens. Text within max_tokens is returned as it is. UTF-8
// sequences stay whole. Pure.
std::string cut_middle(const std::string& text, int64_t max_tokens, int64_t seq);

// One transcript message ready to send.
struct PreparedMessage {
  TranscriptMessage raw;       // as the transcript built it (content not capped)
  std::optional<json> capped;  // a tool output over the per-output cap, cut (sent unless elided)
  int64_t tokens = 0;          // raw estimate of the message as sent when not elided
  std::string dump;            // its JSON text as sent when not elided
  bool elidable = false;       // a tool output longer than elide_min_bytes
  json elided;                 // elidable only: the message with its output as a recall pointer
  std::string elided_dump;
  int64_t elided_tokens = 0;

  const json& shown() const { return capped ? *capped : raw.message; }
  bool elided_at(int64_t elided_through) const { return elidable && raw.seq <= elided_through; }
  const json& sent(int64_t elided_through) const {
    return elided_at(elided_through) ? elided : shown();
  }
  const std::string& sent_dump(int64_t elided_through) const {
    return elided_at(elided_through) ? elided_dump : dump;
  }
  int64_t sent_tokens(int64_t elided_through) const {
    return elided_at(elided_through) ? elided_tokens : tokens;
  }
};

struct PreparedUnit {
  int64_t first_seq = 0;
  int64_t last_seq = 0;
  std::vector<PreparedMessage> messages;
  int64_t tokens = 0;            // raw tokens with nothing elided
  int64_t elided_tokens = 0;     // raw tokens with every elidable output elided
  int64_t min_elidable_seq = 0;  // seqs of the elidable outputs (0, 0: none)
  int64_t max_elidable_seq = 0;
  bool paused_turn = false;  // Unit::paused_turn

  // Raw tokens of the unit as sent with outputs at seq <= elided_through elided.
  int64_t tokens_at(int64_t elided_through) const;
};

// Seq of an event -> the max_tokens its messages' text fields are cut to (CompactionLog::cuts).
using CutMap = std::map<int64_t, int64_t>;

// `cuts`: messages of the events named there are shown with each text field over the limit cut by
// cut_middle (a tool output's per-output cap still applies, whichever is smaller).
PreparedUnit prepare_unit(Unit unit, const ContextConfig& config, const CutMap& cuts = {});

class PromptCache {
 public:
  PromptCache(ContextConfig config, json tools = json::array());

  // Brings the cache up to `events` (sorted by seq, as the store returns them), whose fold is
  // `state` (its compaction log says where the units start; the cache keeps no reference to it).
  // The compaction log and the token calibration are the state's: callers read them there.
  void update(const State& state, const std::vector<Event>& events);

  const ContextConfig& config() const { return config_; }
  const json& tools() const { return tools_; }
  int64_t tools_tokens() const { return tools_tokens_; }

  // The units after the installed summary point, as build_units(events, summarized_through) gives
  // them (the last one may still be open: it is shown closed, with placeholder results).
  std::span<const PreparedUnit> units() const { return units_; }

  // The units after `after_seq`: a suffix of units() when the cut is after the installed one (what
  // compaction plans), else built from `events` (valid until the next call).
  std::span<const PreparedUnit> units_after(const State& state, const std::vector<Event>& events,
                                            int64_t after_seq);

  // Raw token estimate of the installed summary's text (computed once per summary).
  int64_t summary_tokens(const CompactionLog& log);

  // The ledger view for these options, kept up to date with the ledger (ledger_view.h).
  LedgerView& ledger_view(const LedgerViewOptions& o);

  // The messages of units()[first..] as sent with outputs elided through `elided_through`, after
  // two null slots (for the system and task messages) and before one (for the live tail). Reuses
  // the array of the previous prompt when it was given back: then only the messages of new units
  // are copied, not every message.
  json unit_messages(size_t first, int64_t elided_through);
  // Gives back a prompt's messages (unchanged) once they have been sent; see unit_messages.
  void give_back(json messages);

 private:
  void reset();
  void rebuild(const std::vector<Event>& events, int64_t after_seq);
  void feed(const std::vector<Event>& events, size_t from);
  // Prepares again the units holding a message of an event whose cut changed.
  void apply_new_cuts(const CutMap& before);
  // How many leading units a cut at after_seq (>= base_) leaves out: those that start at or before
  // it.
  size_t units_through(int64_t after_seq) const;

  ContextConfig config_;
  json tools_;
  int64_t tools_tokens_ = 0;

  size_t seen_ = 0;  // events read so far (0: none since the last reset)
  int64_t last_seq_ = 0;
  std::string last_id_;
  CutMap cuts_seen_;  // the compaction log's cuts the units were prepared with

  int64_t base_ = 0;  // units_ are built from the events with seq > base_
  UnitBuilder builder_;
  std::vector<PreparedUnit> units_;  // closed units, then the open one when open_shown_
  bool open_shown_ = false;
  std::vector<PreparedUnit> scratch_;  // units_after() when the cut is before the installed one
  int64_t epoch_ = 0;                  // changes whenever units_ loses or reorders units

  int64_t summary_seq_ = -1;  // installed_seq the summary tokens are for
  int64_t summary_tokens_ = 0;
  std::optional<LedgerView> ledger_view_;

  // The messages lent with the last prompt (unit_messages) and what they hold.
  struct Lent {
    int64_t epoch = -1;
    int64_t elided_through = 0;
    size_t first = 0;  // units()[first, first + units) were included
    size_t units = 0;
    size_t size = 0;  // messages in the array
  };
  Lent lent_;
  json spare_;  // given back; null when none
};

// Drops from `events` (the list `cache` was last brought up to) the events at or before the
// installed summary point, always keeping the newest: nothing the cache, compaction or prompt
// assembly reads next lies there (they read the units after that point, which the cache holds, and
// the events after it), so a caller that keeps its events in memory keeps only these and its memory
// does not grow with the log. Given the shortened list, the cache gives what it gives for the whole
// log (tests/context/incremental_prompt_test.cc). A fresh cache needs only the events after the
// state's summary point too: what it reads of older events (the compaction log, the token
// calibration) is folded into State.
void drop_summarized_events(const State& state, std::vector<Event>& events);

}  // namespace marathon::context
