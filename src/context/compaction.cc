#include "context/compaction.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "context/goal_block.h"
#include "context/token_estimate.h"
#include "core/fold.h"

namespace marathon::context {
namespace {

constexpr const char* kSummariserSystem =
    "You compact the working memory of a long optimisation run. Summarise the turns you are given "
    "so the run can continue without them: what was tried and how it went (numbers), what the "
    "files contain now, what failed and why, open leads and the next planned step. Keep tool "
    "names, file names, candidate hashes and seq numbers exactly. The goal and the ledger of "
    "attempts are kept separately: do not restate them. Merge the previous summary into yours. "
    "Write plain text, at most {} words.";

std::string cut(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t k = n;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  return s.substr(0, k) + "...";
}

std::string first_line(const std::string& s, size_t n) { return cut(s.substr(0, s.find('\n')), n); }

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// The turns (after, through] as plain text lines, newest kept when over max_tokens.
std::string turns_text(std::span<const PreparedUnit> units, int64_t through, int64_t elided_through,
                       int64_t max_tokens, const ContextConfig& config) {
  std::vector<std::string> lines;
  for (const PreparedUnit& u : units) {
    if (u.last_seq > through) break;
    for (const PreparedMessage& pm : u.messages) {
      const TranscriptMessage& m = pm.raw;
      const json& msg = m.message;
      const std::string role = msg.value("role", "");
      const std::string content = msg.value("content", "");
      if (role == "tool") {
        bool elided = m.seq <= elided_through &&
                      static_cast<int64_t>(content.size()) > config.elide_min_bytes;
        lines.push_back(fmt::format("tool result [{}]: {}", m.seq,
                                    elided ? elision_pointer(m.seq) : cut(content, 400)));
        continue;
      }
      std::string line = fmt::format("{} [{}]: {}", role, m.seq, cut(content, 600));
      if (msg.contains("tool_calls")) {
        for (const json& c : msg.at("tool_calls")) {
          const json& fn = c.at("function");
          line += fmt::format("\n  -> {}({})", fn.value("name", ""),
                              cut(fn.value("arguments", ""), 300));
        }
      }
      lines.push_back(std::move(line));
    }
  }
  int64_t budget = max_tokens;
  size_t first = lines.size();
  while (first > 0) {
    int64_t t = estimate_text_tokens(lines[first - 1]) + 1;
    if (t > budget) break;
    budget -= t;
    --first;
  }
  std::string out;
  if (first > 0) out += fmt::format("({} earlier messages left out)\n", first);
  for (size_t i = first; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

// Tokens of the prompt that a compaction would leave, without the hard cap (what it frees).
int64_t natural_tokens(const Layout& l, const ContextView& v, const ContextConfig& config) {
  return assemble(l, v, config, /*enforce_hard_cap=*/false).tokens_estimate;
}

// The text fields of a message as sent at `elided_through` and their raw token estimates.
struct Field {
  int64_t tokens;
  int64_t bytes;
};

// Raw tokens of unit `u` at `elided_through` if every field were cut to `max_tokens`, given its
// fields and the tokens outside them.
int64_t tokens_if_cut(int64_t outside, const std::vector<Field>& fields, int64_t max_tokens) {
  int64_t t = outside;
  for (const Field& f : fields) t += std::min(f.tokens, max_tokens);
  return t;
}

// Plans the cut of one unit so that it takes at most `target_raw` raw tokens: the largest
// max_tokens (at least kMinCutTokens) that gets there, applied to every message that has a field
// over it. Appends to `plan` and returns the unit's raw tokens once cut.
int64_t plan_unit_cut(const PreparedUnit& u, int64_t elided_through, int64_t target_raw,
                      const ContextConfig& config, CompactionPlan& plan) {
  struct MessageFields {
    int64_t seq;
    std::vector<Field> fields;
  };
  std::vector<MessageFields> per_message;
  std::vector<Field> all;
  int64_t outside = 0;
  for (const PreparedMessage& m : u.messages) {
    if (m.elided_at(elided_through)) {
      outside += m.elided_tokens;
      continue;
    }
    const json& shown = m.shown();
    MessageFields mf{m.raw.seq, {}};
    auto add = [&](const json& field) {
      if (!field.is_string()) return;
      const std::string& text = field.get_ref<const std::string&>();
      mf.fields.push_back({estimate_text_tokens(text), static_cast<int64_t>(text.size())});
    };
    if (shown.contains("content")) add(shown.at("content"));
    if (shown.contains("tool_calls") && shown.at("tool_calls").is_array()) {
      for (const json& call : shown.at("tool_calls")) {
        if (call.is_object() && call.contains("function") && call.at("function").is_object() &&
            call.at("function").contains("arguments")) {
          add(call.at("function").at("arguments"));
        }
      }
    }
    int64_t in_fields = 0;
    for (const Field& f : mf.fields) in_fields += f.tokens;
    outside += m.tokens - in_fields;
    all.insert(all.end(), mf.fields.begin(), mf.fields.end());
    per_message.push_back(std::move(mf));
  }
  int64_t hi = kMinCutTokens;
  for (const Field& f : all) hi = std::max(hi, f.tokens);
  int64_t lo = kMinCutTokens;
  if (tokens_if_cut(outside, all, lo) < target_raw) {
    while (lo < hi) {  // the largest max_tokens that fits
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (tokens_if_cut(outside, all, mid) <= target_raw) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
  }
  const int64_t max_tokens = lo;
  CutMap cuts;
  for (const MessageFields& mf : per_message) {
    int64_t bytes = 0;
    for (const Field& f : mf.fields) {
      if (f.tokens > max_tokens) bytes += f.bytes;
    }
    if (bytes == 0 || cuts.count(mf.seq)) continue;
    cuts[mf.seq] = max_tokens;
    plan.cuts.push_back({mf.seq, max_tokens, bytes});
  }
  if (cuts.empty()) return u.tokens_at(elided_through);
  plan.cut_units.push_back(u.first_seq);
  Unit raw{u.first_seq, u.last_seq, {}, u.paused_turn};
  for (const PreparedMessage& m : u.messages) raw.messages.push_back(m.raw);
  return prepare_unit(std::move(raw), config, cuts).tokens_at(elided_through);
}

struct OutputRef {
  int64_t seq;
  int64_t tokens;
};

}  // namespace

int64_t unit_budget_tokens(const Layout& layout, const ContextView& view,
                           const ContextConfig& config) {
  Layout fixed = layout;
  fixed.units = {};
  // 40: room for the note on units left out, as assemble() keeps it.
  const int64_t fixed_tokens = calibrated(
      assemble(fixed, view, config, /*enforce_hard_cap=*/false).tokens_raw + 40, layout.ratio);
  return config.hard_tokens() - fixed_tokens;
}

std::string validate_summary(const std::string& text, const ContextConfig& config) {
  std::string t = trim(text);
  if (t.empty()) return "empty summary";
  if (t.size() < 16) return fmt::format("summary too short ({} bytes)", t.size());
  int64_t tokens = estimate_text_tokens(t);
  int64_t limit = config.frac(config.max_summary);
  if (tokens > limit) return fmt::format("summary too long ({} tokens, limit {})", tokens, limit);
  return "";
}

namespace {

SummaryRequest summary_request_from(std::span<const PreparedUnit> units,
                                    const ContextConfig& config,
                                    const std::string& previous_summary, int64_t after_seq,
                                    int64_t through_seq, int64_t elided_through) {
  const int64_t words = std::max<int64_t>(60, config.frac(config.max_summary) * 6 / 10);
  std::string user =
      "Previous summary:\n" +
      (previous_summary.empty() ? std::string("(none)") : previous_summary) +
      fmt::format("\n\nTurns to summarise (events {} to {}):\n", after_seq + 1, through_seq);
  const int64_t input_cap =
      std::max<int64_t>(512, config.frac(0.5) - estimate_text_tokens(user) - 600);
  user += turns_text(units, through_seq, elided_through, input_cap, config);
  SummaryRequest r;
  r.messages =
      json::array({json{{"role", "system"}, {"content", fmt::format(kSummariserSystem, words)}},
                   json{{"role", "user"}, {"content", std::move(user)}}});
  return r;
}

}  // namespace

SummaryRequest summary_request(const std::vector<Event>& events, const ContextConfig& config,
                               const std::string& previous_summary, int64_t after_seq,
                               int64_t through_seq, int64_t elided_through) {
  PromptCache cache(config);
  const State state = fold(events);
  return summary_request_from(cache.units_after(state, events, after_seq), config, previous_summary,
                              after_seq, through_seq, elided_through);
}

std::string structural_summary(const State& state, const std::vector<Event>& events,
                               const ContextConfig& config, const std::string& previous_summary,
                               int64_t after_seq, int64_t through_seq, const std::string& why) {
  std::string s = "Summary built by the runtime from the log";
  if (!why.empty()) s += " (the model's summary was not used: " + why + ")";
  s += fmt::format(".\nCovers events {} to {}. So far: {} tool calls, {} evaluations",
                   after_seq + 1, through_seq, state.used.tool_calls, state.evaluations);
  if (state.best_score) {
    s += fmt::format(", best score {} (candidate {})", fmt_number(*state.best_score),
                     short_hash(state.best_candidate));
  } else {
    s += ", no correct result yet";
  }
  s += ".";

  std::map<std::string, int> calls;
  std::map<std::string, int> files;
  std::vector<std::string> last;
  for (size_t i = first_index_after(events, after_seq); i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.seq > through_seq) break;
    if (is<events::ToolFinished>(e)) {
      auto p = payload_of<events::ToolFinished>(e);
      std::string name = p.name.empty() ? "?" : p.name;
      ++calls[name];
      last.push_back(fmt::format("- [{}] {} {}: {}", e.seq, name, p.ok ? "ok" : "failed",
                                 first_line(p.output, 100)));
    } else if (is<events::WorkspaceWritten>(e)) {
      ++files[payload_of<events::WorkspaceWritten>(e).path];
    }
  }
  if (!calls.empty()) {
    s += "\nTool calls in these turns:";
    for (const auto& [name, n] : calls) s += fmt::format(" {} x{};", name, n);
  }
  if (!files.empty()) {
    s += "\nFiles written in these turns:";
    for (const auto& [path, n] : files) s += fmt::format(" {} ({}x);", path, n);
  }
  if (!last.empty()) {
    s += "\nLast actions before the cut:";
    size_t from = last.size() > 10 ? last.size() - 10 : 0;
    for (size_t i = from; i < last.size(); ++i) s += "\n" + last[i];
  }
  const int64_t limit = config.frac(config.max_summary);
  if (!previous_summary.empty()) {
    int64_t room = limit - estimate_text_tokens(s) - 20;
    if (room > 50) {
      std::string prev = previous_summary;
      while (estimate_text_tokens(prev) > room && prev.size() > 64)
        prev = cut(prev, prev.size() / 2);
      s += "\nEarlier summary:\n" + prev;
    }
  }
  while (estimate_text_tokens(s) > limit && s.size() > 64) s = cut(s, s.size() * 3 / 4);
  return s;
}

CompactionPlan plan_compaction(const State& state, const std::vector<Event>& events,
                               const ContextConfig& config, const json& tools, Force force) {
  PromptCache cache(config, tools);
  return plan_compaction(cache, state, events, force);
}

CompactionPlan plan_compaction(PromptCache& cache, const State& state,
                               const std::vector<Event>& events, Force force) {
  cache.update(state, events);
  const ContextConfig& config = cache.config();
  const CompactionLog& c = state.compaction;
  CompactionPlan p;
  p.elide_through = c.elided_through;
  p.summarize_through = c.summarized_through;

  // A compaction a crash interrupted is finished first, from what the log already holds.
  if (c.open_proposal_seq > 0 || c.open_response_seq > 0) {
    const events::CompactionScope src =
        c.open_proposal_seq > 0 ? c.open_proposal.scope
                                : c.open_response.scope.value_or(events::CompactionScope{});
    p.action = c.open_proposal_seq > 0 ? CompactionPlan::Action::kFinishProposal
                                       : CompactionPlan::Action::kFinishResponse;
    p.trigger = src.trigger.empty() ? "auto" : src.trigger;
    p.reason = "resume";
    p.tokens_before = src.tokens_before;
    p.summarize_through = src.summarized_through;
    p.elide_through = std::max(c.elided_through, src.elided_through);
    return p;
  }

  const bool manual = force == Force::kManual || c.pending_request_seq > 0;
  const bool overflow = force == Force::kOverflow || force == Force::kOverHard;
  p.trigger = manual ? "manual" : "auto";
  p.reason = force == Force::kOverflow   ? "context_length_error"
             : force == Force::kOverHard ? "over_hard_threshold"
             : manual                    ? "manual_request"
                                         : "soft_threshold";

  Layout l = make_layout(state, cache);
  ContextView v{c.summary, c.summarized_through, c.elided_through};
  p.tokens_before = natural_tokens(l, v, config);

  // A unit that alone does not fit beside the fixed part of the prompt is cut first: no other
  // stage can shrink the newest unit, and the hard cap would drop an older one without a word.
  // After a context-length error, any unit above half the recent-turns share is cut.
  {
    const int64_t budget = unit_budget_tokens(l, v, config);
    const int64_t share = config.frac(config.keep_recent_turns * (overflow ? 0.5 : 1.0));
    const int64_t trigger = overflow ? std::min(budget, share) : budget;
    const int64_t target = std::max<int64_t>(1, std::min(budget, share));
    const int64_t target_raw =
        std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(target) / l.ratio));
    int64_t freed = 0;
    for (const PreparedUnit& u : l.units) {
      const int64_t before = u.tokens_at(c.elided_through);
      if (calibrated(before, l.ratio) <= trigger) continue;
      const int64_t after = plan_unit_cut(u, c.elided_through, target_raw, config, p);
      freed += calibrated(before, l.ratio) - calibrated(after, l.ratio);
    }
    if (!p.cuts.empty()) {
      p.action = CompactionPlan::Action::kCut;
      p.trigger = "auto";  // a manual request stays pending: the next plan serves it
      if (!overflow) p.reason = "unit_over_window";
      p.tokens_after = p.tokens_before - freed;
      return p;
    }
  }
  if (!manual && !overflow) {
    if (p.tokens_before <= config.soft_tokens()) return p;
    if (c.noop_seq > 0 && p.tokens_before <= c.noop_tokens + config.frac(config.noop_regrow)) {
      return p;  // the last attempt could not free anything; wait until the prompt grows
    }
  }
  const double shrink = overflow ? 0.5 : 1.0;

  // Stage 1: keep the newest outputs up to keep_recent_outputs (never the newest unit's).
  std::vector<OutputRef> outputs;
  for (size_t i = 0; i + 1 < l.units.size(); ++i) {
    for (const PreparedMessage& pm : l.units[i].messages) {
      const TranscriptMessage& m = pm.raw;
      if (!m.tool_output || m.seq <= c.elided_through) continue;
      if (m.content_bytes <= config.elide_min_bytes) continue;
      outputs.push_back({m.seq, m.content_tokens});
    }
  }
  std::sort(outputs.begin(), outputs.end(),
            [](const OutputRef& a, const OutputRef& b) { return a.seq > b.seq; });
  const int64_t keep_outputs = config.frac(config.keep_recent_outputs * shrink);
  int64_t acc = 0;
  for (const OutputRef& o : outputs) {
    acc += calibrated(o.tokens, l.ratio);
    if (acc > keep_outputs || manual || overflow) {
      // Manual and overflow compactions elide every output but the newest unit's.
      p.elide_through = o.seq;
      break;
    }
  }
  const bool elision_frees = p.elide_through > c.elided_through;
  ContextView v1{c.summary, c.summarized_through, p.elide_through};
  const int64_t after_stage1 = elision_frees ? natural_tokens(l, v1, config) : p.tokens_before;
  // Elision alone must leave real room (a tenth of the window under the soft threshold), or the
  // next few steps would each elide a little again.
  const int64_t stage1_target = config.soft_tokens() - config.frac(0.10);
  if (elision_frees && !manual && !overflow && after_stage1 <= stage1_target) {
    p.action = CompactionPlan::Action::kElide;
    return p;
  }

  // Stage 2: summarise every unit older than the newest keep_recent_turns of the window.
  const int64_t keep_turns = config.frac(config.keep_recent_turns * shrink);
  acc = 0;
  for (size_t i = l.units.size(); i > 0; --i) {
    const PreparedUnit& u = l.units[i - 1];
    acc += calibrated(u.tokens_at(p.elide_through), l.ratio);
    if (i != l.units.size() && acc > keep_turns) {
      p.summarize_through = u.last_seq;
      break;
    }
    if (i != l.units.size() && (manual || overflow) && i + 1 < l.units.size()) {
      // manual/overflow: summarise all but the newest two units even under the keep size
      p.summarize_through = u.last_seq;
      break;
    }
  }
  if (p.summarize_through > c.summarized_through) {
    p.action = CompactionPlan::Action::kSummarise;
  } else if (elision_frees) {
    p.action = CompactionPlan::Action::kElide;
  } else {
    p.action = CompactionPlan::Action::kNoop;
  }
  return p;
}

CompactionResult run_compaction(const CompactionPlan& plan, const State& state,
                                const std::vector<Event>& events, const ContextConfig& config,
                                const Summariser& summariser, const ContextIO& io,
                                const json& tools) {
  PromptCache cache(config, tools);
  return run_compaction(cache, plan, state, events, summariser, io);
}

CompactionResult run_compaction(PromptCache& cache, const CompactionPlan& plan, const State& state,
                                const std::vector<Event>& events, const Summariser& summariser,
                                const ContextIO& io) {
  using A = CompactionPlan::Action;
  CompactionResult r;
  r.tokens_before = plan.tokens_before;
  if (plan.action == A::kNone) return r;
  auto append = [&](NewEvent e) { r.appended.push_back(io.append(e)); };

  // Everything read from state, events and the cache happens here, before the first append.
  cache.update(state, events);
  const ContextConfig& config = cache.config();
  const CompactionLog c = state.compaction;
  const Layout layout = make_layout(state, cache);  // units after the installed summary point
  Layout after_layout = layout;
  after_layout.units = cache.units_after(state, events, plan.summarize_through);
  auto tokens_with = [&](const std::string& summary) {
    return natural_tokens(after_layout,
                          ContextView{summary, plan.summarize_through, plan.elide_through}, config);
  };
  using namespace events;
  CompactionScope base{plan.trigger, plan.reason, plan.summarize_through, plan.elide_through,
                       plan.tokens_before};
  auto installed = [&](CompactionOutcome outcome, std::string source) {
    CompactionInstalled p;
    p.scope = base;
    p.outcome = outcome;
    p.source = std::move(source);
    return p;
  };

  if (plan.action == A::kNoop) {
    CompactionInstalled p = installed(CompactionOutcome::kNoop, "none");
    p.summary = c.summary;
    p.tokens_after = plan.tokens_before;
    append(make_event(p));
    r.outcome = "noop";
    r.source = "none";
    r.tokens_after = plan.tokens_before;
    spdlog::info("compaction ({}): nothing more to free at {} tokens", plan.trigger,
                 plan.tokens_before);
    return r;
  }

  if (plan.action == A::kCut) {
    CompactionCut p;
    p.scope = base;
    p.outcome = CompactionOutcome::kCompacted;
    p.source = "cut";
    p.cuts = plan.cuts;
    p.units = plan.cut_units;
    p.tokens_after = plan.tokens_after;
    append(make_event(p));
    r.outcome = "compacted";
    r.source = "cut";
    r.tokens_after = plan.tokens_after;
    spdlog::warn(
        "compaction ({}): {} message(s) too large for the window cut to a head and a "
        "tail, {} -> {} tokens",
        plan.trigger, plan.cuts.size(), plan.tokens_before, plan.tokens_after);
    return r;
  }

  if (plan.action == A::kElide) {
    r.tokens_after = tokens_with(c.summary);
    if (plan.trigger == "manual") {  // a manual request is answered by an installed event
      CompactionInstalled p = installed(CompactionOutcome::kCompacted, "elision");
      p.tokens_after = r.tokens_after;
      p.summary = c.summary;
      append(make_event(p));
    } else {
      CompactionElided p;
      p.scope = base;
      p.outcome = CompactionOutcome::kCompacted;
      p.source = "elision";
      p.tokens_after = r.tokens_after;
      append(make_event(p));
    }
    r.outcome = "compacted";
    r.source = "elision";
    spdlog::info("compaction ({}): outputs through seq {} elided, {} -> {} tokens", plan.trigger,
                 plan.elide_through, plan.tokens_before, r.tokens_after);
    return r;
  }

  // Stage 2. The summary covers (previous summary point, plan.summarize_through].
  const int64_t after = c.summarized_through;
  if (plan.summarize_through <= after) {  // a stale proposal: nothing left to install
    CompactionInstalled p = installed(CompactionOutcome::kFailed, "none");
    p.summary = c.summary;
    p.scope.summarized_through = c.summarized_through;
    p.tokens_after = plan.tokens_before;
    p.error = fmt::format("summary point {} is not after the installed one {}",
                          plan.summarize_through, after);
    append(make_event(p));
    r.outcome = "failed";
    r.tokens_after = plan.tokens_before;
    return r;
  }
  // The structural fallback is computed now: state and events may change after the first append.
  const std::string fallback_plain =
      structural_summary(state, events, config, c.summary, after, plan.summarize_through, "");
  auto fallback = [&](const std::string& why) {
    // The reason line is the only difference; splice it into the precomputed text.
    std::string s = fallback_plain;
    const std::string head = "Summary built by the runtime from the log";
    if (s.rfind(head, 0) == 0)
      s.insert(head.size(), " (the model's summary was not used: " + why + ")");
    return s;
  };

  std::string text;
  std::string model_error;
  if (plan.action == A::kSummarise) {
    SummaryRequest req = summary_request_from(layout.units, config, c.summary, after,
                                              plan.summarize_through, plan.elide_through);
    if (plan.elide_through > c.elided_through && plan.trigger == "auto") {
      CompactionElided p;
      p.scope = base;
      p.scope.summarized_through = c.summarized_through;
      p.outcome = CompactionOutcome::kCompacted;
      p.source = "elision";
      p.tokens_after = natural_tokens(
          layout, ContextView{c.summary, c.summarized_through, plan.elide_through}, config);
      append(make_event(p));
    }
    req.interrupted = io.interrupted;
    SummaryReply reply;
    if (!summariser) {
      reply.response.error =
          ModelError::make(LlmErrorKind::kUnavailable, "no summariser configured");
    } else {
      try {
        reply = summariser(req);
      } catch (const std::exception& e) {
        reply = SummaryReply{};
        reply.response.error = ModelError::make(LlmErrorKind::kException, e.what());
      }
    }
    const std::optional<ModelError>& error = reply.response.error;
    if (error && error->kind == LlmErrorKind::kInterrupted) {
      // Stopped by a signal: nothing is logged for the call; the next plan starts it again.
      r.outcome = "interrupted";
      r.tokens_after = plan.tokens_before;
      return r;
    }
    const json& msg = reply.response.message;
    if (!error && msg.is_object() && msg.contains("content") && msg.at("content").is_string()) {
      text = msg.at("content").get<std::string>();
    }
    if (error) model_error = error->message.empty() ? json(*error).dump() : error->message;
    if (summariser) {
      ModelResponse p = std::move(reply.response);
      p.purpose = ModelResponse::kPurposeCompaction;
      p.scope = base;
      p.message = json{{"content", text}};
      p.problems = nullptr;
      p.usage_estimated = reply.usage_rejected.has_value();
      if (reply.usage_rejected) {
        LlmUsageRejected w = *reply.usage_rejected;
        w.purpose = ModelResponse::kPurposeCompaction;
        w.provider = p.provider;
        w.model = p.model;
        append(make_event(w));
      }
      append(make_event(p));
    }
  } else if (plan.action == A::kFinishResponse) {
    const ModelResponse& resp = c.open_response;
    if (resp.error) {
      model_error = resp.error->message.empty() ? "summariser failed" : resp.error->message;
    } else if (resp.message.is_object()) {
      text = resp.message.value("content", "");
    }
  }

  if (plan.action == A::kSummarise || plan.action == A::kFinishResponse) {
    CompactionProposed p;
    p.scope = base;
    p.source = "model";
    if (!text.empty()) p.summary_sha = io.put_blob(text);
    p.error = model_error;
    append(make_event(p));
  } else {  // kFinishProposal
    const std::string& sha = c.open_proposal.summary_sha;
    if (!sha.empty()) {
      std::optional<std::string> blob = io.get_blob(sha);
      if (blob) {
        text = *blob;
      } else {
        model_error = "proposed summary blob " + sha + " is missing";
      }
    } else {
      model_error =
          c.open_proposal.error.empty() ? "no summary was proposed" : c.open_proposal.error;
    }
  }

  std::string why = model_error.empty() ? validate_summary(text, config) : model_error;
  CompactionInstalled p = installed(CompactionOutcome::kCompacted, "");
  if (why.empty()) {
    p.source = "model";
    p.summary = trim(text);
  } else {
    p.source = "structural";
    p.summary = fallback(why);
    p.rejected = why;
    spdlog::warn("compaction: model summary not used ({}); installing a structural summary", why);
  }
  r.tokens_after = tokens_with(p.summary);
  p.tokens_after = r.tokens_after;
  r.source = p.source;
  append(make_event(p));
  r.outcome = "compacted";
  spdlog::info("compaction ({}): summary ({}) through seq {}, {} -> {} tokens", plan.trigger,
               r.source, plan.summarize_through, plan.tokens_before, r.tokens_after);
  return r;
}

}  // namespace marathon::context
