#include "context/prompt_cache.h"

#include <fmt/format.h>

#include <algorithm>

namespace marathon::context {
namespace {

std::string cap_output(const std::string& content, int64_t seq, int64_t max_tokens) {
  if (estimate_text_tokens(content) <= max_tokens) return content;
  // Cut by bytes: an output that estimates above its cap is cut to 3 bytes per allowed token,
  // shrinking in proportion until it fits.
  size_t keep = static_cast<size_t>(std::max<int64_t>(64, max_tokens * 3));
  std::string cut;
  while (true) {
    size_t n = std::min(keep, content.size());
    while (n > 0 && (static_cast<unsigned char>(content[n]) & 0xC0) == 0x80) --n;
    cut = content.substr(0, n);
    int64_t est = estimate_text_tokens(cut);
    if (est <= max_tokens || keep <= 64) break;
    keep = static_cast<size_t>(static_cast<double>(keep) * 0.95 * static_cast<double>(max_tokens) /
                               static_cast<double>(est));
  }
  return cut +
         fmt::format("\n[output cut to fit the context window; full output: recall(seq={})]", seq);
}

// The message with its content replaced, and the raw tokens that costs.
json with_content(const TranscriptMessage& m, std::string content, int64_t* tokens) {
  *tokens = m.tokens - m.content_tokens + estimate_text_tokens(content);
  json msg = m.message;
  msg["content"] = std::move(content);
  return msg;
}

// The longest prefix of `s` of at most n bytes that does not split a UTF-8 sequence.
size_t utf8_head(const std::string& s, size_t n) {
  n = std::min(n, s.size());
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

// The start of the longest suffix of `s` of at most n bytes that does not split a UTF-8 sequence.
size_t utf8_tail_start(const std::string& s, size_t n) {
  size_t start = s.size() - std::min(n, s.size());
  while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;
  return start;
}

// Each text field of a message (content, tool call arguments) over `max_tokens` cut.
// `changed` says whether any field was cut.
json cut_message(const json& message, int64_t max_tokens, int64_t seq, bool* changed) {
  json out = message;
  auto cut_field = [&](json& field) {
    if (!field.is_string()) return;
    const std::string& text = field.get_ref<const std::string&>();
    if (estimate_text_tokens(text) > std::max(max_tokens, kMinCutTokens)) {
      field = cut_middle(text, max_tokens, seq);
      *changed = true;
    }
  };
  if (out.contains("content")) cut_field(out["content"]);
  if (out.contains("tool_calls") && out["tool_calls"].is_array()) {
    for (json& call : out["tool_calls"]) {
      if (call.is_object() && call.contains("function") && call["function"].is_object() &&
          call["function"].contains("arguments")) {
        cut_field(call["function"]["arguments"]);
      }
    }
  }
  return out;
}

}  // namespace

std::string cut_middle(const std::string& text, int64_t max_tokens, int64_t seq) {
  max_tokens = std::max(max_tokens, kMinCutTokens);
  if (estimate_text_tokens(text) <= max_tokens) return text;
  auto note = [&](size_t head, size_t tail_start) {
    return fmt::format(
        "\n[cut to fit the context window: {} bytes in all, bytes {}..{} left out; "
        "recall(seq={}) pages through the whole]\n",
        text.size(), head, tail_start, seq);
  };
  // Start at 3 bytes per allowed token, split evenly between the ends, and shrink in proportion
  // until the estimate fits (every step keeps strictly less, so this ends).
  size_t keep = static_cast<size_t>(max_tokens) * 3;
  std::string out;
  while (true) {
    keep = std::min(keep, text.size());
    const size_t head = utf8_head(text, keep / 2);
    const size_t tail_start = std::max(head, utf8_tail_start(text, keep - keep / 2));
    out = text.substr(0, head) + note(head, tail_start) + text.substr(tail_start);
    const int64_t est = estimate_text_tokens(out);
    if (est <= max_tokens || keep <= 32) break;
    const size_t next =
        static_cast<size_t>(static_cast<double>(keep) * 0.95 * static_cast<double>(max_tokens) /
                            static_cast<double>(est));
    keep = std::min(keep - 1, next);
  }
  return out;
}

std::string elision_pointer(int64_t seq) {
  return fmt::format("[output elided: recall(seq={})]", seq);
}

int64_t PreparedUnit::tokens_at(int64_t elided_through) const {
  if (max_elidable_seq == 0 || elided_through < min_elidable_seq) return tokens;
  if (elided_through >= max_elidable_seq) return elided_tokens;
  int64_t t = 0;
  for (const PreparedMessage& m : messages) t += m.sent_tokens(elided_through);
  return t;
}

PreparedUnit prepare_unit(Unit unit, const ContextConfig& config, const CutMap& cuts) {
  const int64_t output_cap = std::max<int64_t>(200, config.frac(0.15));
  PreparedUnit u;
  u.first_seq = unit.first_seq;
  u.last_seq = unit.last_seq;
  u.paused_turn = unit.paused_turn;
  u.messages.reserve(unit.messages.size());
  for (TranscriptMessage& raw : unit.messages) {
    PreparedMessage m;
    m.raw = std::move(raw);
    m.tokens = m.raw.tokens;
    auto cut = cuts.empty() ? cuts.end() : cuts.find(m.raw.seq);
    bool was_cut = false;
    if (cut != cuts.end()) {
      // A logged cut: every field over its limit shows a head and a tail (a tool output also
      // keeps within its per-output cap).
      const int64_t limit = m.raw.tool_output ? std::min(cut->second, output_cap) : cut->second;
      json shown = cut_message(m.raw.message, limit, m.raw.seq, &was_cut);
      if (was_cut) {
        m.tokens = estimate_message_tokens(shown);
        m.capped = std::move(shown);
      }
    }
    if (m.raw.tool_output) {
      if (!was_cut && m.raw.content_tokens > output_cap) {
        m.capped =
            with_content(m.raw,
                         cap_output(m.raw.message.at("content").get_ref<const std::string&>(),
                                    m.raw.seq, output_cap),
                         &m.tokens);
      }
      if (m.raw.content_bytes > config.elide_min_bytes) {
        m.elidable = true;
        m.elided = with_content(m.raw, elision_pointer(m.raw.seq), &m.elided_tokens);
        m.elided_dump = m.elided.dump();
        if (u.min_elidable_seq == 0 || m.raw.seq < u.min_elidable_seq)
          u.min_elidable_seq = m.raw.seq;
        u.max_elidable_seq = std::max(u.max_elidable_seq, m.raw.seq);
      }
    }
    m.dump = m.shown().dump();
    u.tokens += m.tokens;
    u.elided_tokens += m.elidable ? m.elided_tokens : m.tokens;
    u.messages.push_back(std::move(m));
  }
  return u;
}

PromptCache::PromptCache(ContextConfig config, json tools)
    : config_(config), tools_(std::move(tools)) {
  tools_tokens_ = tools_.is_array() && !tools_.empty() ? estimate_text_tokens(tools_.dump()) : 0;
}

void PromptCache::reset() {
  ++epoch_;
  seen_ = 0;
  last_seq_ = 0;
  last_id_.clear();
  cuts_seen_.clear();
  base_ = 0;
  builder_.reset();
  units_.clear();
  open_shown_ = false;
}

void PromptCache::update(const State& state, const std::vector<Event>& events) {
  // The events after the last one this cache read: found by seq, since the caller may have dropped
  // a prefix it no longer needs (drop_summarized_events).
  size_t from = 0;
  if (seen_ > 0) {
    const size_t last = first_index_after(events, last_seq_ - 1);
    const bool extends =
        last < events.size() && events[last].seq == last_seq_ && events[last].id == last_id_;
    if (extends) {
      from = last + 1;
    } else {
      reset();
    }
  }
  if (from == events.size()) return;
  const bool fresh = seen_ == 0;
  const CompactionLog& log = state.compaction;
  const CutMap cuts_before = std::move(cuts_seen_);  // almost always empty
  cuts_seen_ = log.cuts;
  seen_ += events.size() - from;
  last_seq_ = events.back().seq;
  last_id_ = events.back().id;

  const int64_t cut = log.summarized_through;
  if (fresh || cut < base_) {
    rebuild(events, cut);
    return;
  }
  feed(events, from);
  if (log.cuts != cuts_before) apply_new_cuts(cuts_before);
  if (cut == base_) return;
  // A summary was installed: the units it covers leave the cache. What a build from the cut gives
  // is exactly the units that start after it: until the first unit starts after the cut, a build
  // from there has no open unit and drops every result, and from that unit on both builds are in
  // the same state. An open unit that started before the cut is forgotten (its later results are
  // not the transcript's any more).
  const size_t k = units_through(cut);
  if (open_shown_ && k == units_.size()) {
    builder_.reset();
    open_shown_ = false;
  }
  units_.erase(units_.begin(), units_.begin() + static_cast<std::ptrdiff_t>(k));
  ++epoch_;
  base_ = cut;
}

void PromptCache::rebuild(const std::vector<Event>& events, int64_t after_seq) {
  ++epoch_;
  builder_.reset();
  units_.clear();
  open_shown_ = false;
  base_ = after_seq;
  feed(events, first_index_after(events, after_seq));
}

void PromptCache::feed(const std::vector<Event>& events, size_t from) {
  if (from >= events.size()) return;
  if (open_shown_) {
    units_.pop_back();
    open_shown_ = false;
  }
  std::vector<Unit> closed;
  for (size_t i = from; i < events.size(); ++i) builder_.add(events[i], closed);
  for (Unit& u : closed) units_.push_back(prepare_unit(std::move(u), config_, cuts_seen_));
  Unit open;
  if (builder_.peek_open(&open)) {
    units_.push_back(prepare_unit(std::move(open), config_, cuts_seen_));
    open_shown_ = true;
  }
}

void PromptCache::apply_new_cuts(const CutMap& before) {
  auto changed = [&](int64_t seq) {
    auto now = cuts_seen_.find(seq);
    if (now == cuts_seen_.end()) return false;
    auto was = before.find(seq);
    return was == before.end() || was->second != now->second;
  };
  bool any = false;
  for (PreparedUnit& u : units_) {
    bool hit = false;
    for (const PreparedMessage& m : u.messages) hit = hit || changed(m.raw.seq);
    if (!hit) continue;
    Unit raw{u.first_seq, u.last_seq, {}, u.paused_turn};
    for (PreparedMessage& m : u.messages) raw.messages.push_back(std::move(m.raw));
    u = prepare_unit(std::move(raw), config_, cuts_seen_);
    any = true;
  }
  if (any) ++epoch_;  // the messages lent with the last prompt are stale
}

size_t PromptCache::units_through(int64_t after_seq) const {
  size_t k = 0;
  while (k < units_.size() && units_[k].first_seq <= after_seq) ++k;
  return k;
}

std::span<const PreparedUnit> PromptCache::units_after(const State& state,
                                                       const std::vector<Event>& events,
                                                       int64_t after_seq) {
  update(state, events);
  if (after_seq == base_) return units_;
  if (after_seq > base_)
    return std::span<const PreparedUnit>(units_).subspan(units_through(after_seq));
  scratch_.clear();
  for (Unit& u : build_units(events, after_seq))
    scratch_.push_back(prepare_unit(std::move(u), config_, cuts_seen_));
  return scratch_;
}

int64_t PromptCache::summary_tokens(const CompactionLog& log) {
  if (summary_seq_ != log.installed_seq) {
    summary_seq_ = log.installed_seq;
    summary_tokens_ = estimate_text_tokens(log.summary);
  }
  return summary_tokens_;
}

LedgerView& PromptCache::ledger_view(const LedgerViewOptions& o) {
  const bool same = ledger_view_ && ledger_view_->options().best_n == o.best_n &&
                    ledger_view_->options().recent_m == o.recent_m &&
                    ledger_view_->options().max_tokens == o.max_tokens &&
                    ledger_view_->options().max_line_chars == o.max_line_chars &&
                    ledger_view_->options().direction == o.direction;
  if (!same) ledger_view_.emplace(o);
  return *ledger_view_;
}

json PromptCache::unit_messages(size_t first, int64_t elided_through) {
  auto count = [this](size_t from, size_t to) {
    size_t n = 0;
    for (size_t i = from; i < to; ++i) n += units_[i].messages.size();
    return n;
  };
  json out = json::array();
  size_t from = first;  // the first unit whose messages are still to be added
  // Units of the previous prompt but its newest (which may have been open then) are unchanged as
  // long as no unit was dropped or rebuilt since (epoch) and the elision point is the same.
  const size_t reusable_end = lent_.first + (lent_.units > 0 ? lent_.units - 1 : 0);
  if (spare_.is_array() && lent_.epoch == epoch_ && lent_.elided_through == elided_through &&
      spare_.size() == lent_.size && first >= lent_.first && first <= reusable_end &&
      reusable_end <= units_.size()) {
    out = std::move(spare_);
    auto& a = out.get_ref<json::array_t&>();
    const size_t keep = count(first, reusable_end);
    const size_t dropped = count(lent_.first, first);  // left out by the hard cap since
    a.erase(a.begin() + 2, a.begin() + 2 + static_cast<std::ptrdiff_t>(dropped));
    a.resize(2 + keep);
    from = reusable_end;
  } else {
    out.get_ref<json::array_t&>().resize(2);
  }
  spare_ = json();
  auto& a = out.get_ref<json::array_t&>();
  a.reserve(a.size() + count(from, units_.size()));
  for (size_t i = from; i < units_.size(); ++i) {
    for (const PreparedMessage& m : units_[i].messages) a.push_back(m.sent(elided_through));
  }
  a.emplace_back();  // the slot for the live tail
  lent_ = Lent{epoch_, elided_through, first, units_.size() - first, a.size()};
  return out;
}

void PromptCache::give_back(json messages) { spare_ = std::move(messages); }

void drop_summarized_events(const State& state, std::vector<Event>& events) {
  size_t keep_from = first_index_after(events, state.compaction.summarized_through);
  keep_from = std::min(keep_from, events.empty() ? 0 : events.size() - 1);
  if (keep_from == 0) return;
  events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(keep_from));
}

}  // namespace marathon::context
