#include "context/prompt_builder.h"

#include <fmt/format.h>

#include <optional>

#include "context/compaction_log.h"
#include "context/goal_block.h"
#include "context/ledger_view.h"
#include "context/token_estimate.h"

namespace marathon::context {
namespace {

constexpr const char* kRules =
    "You are an optimisation agent working inside marathon, a durable runtime. You improve a "
    "measurable target by editing the task's files, evaluating candidates and learning from the "
    "results.\n"
    "Rules:\n"
    "- Work only through the tools. Edit only the task's editable files.\n"
    "- Evaluate every candidate with `evaluate`; the evaluator's verdict is the only measure that "
    "counts. Never try to game the evaluator.\n"
    "- Before each evaluation say in one sentence what strategy the candidate tries: the runtime "
    "records it in the ledger.\n"
    "- Record what you learn with `note` (kind strategy, finding or dead_end). Dead ends in the "
    "ledger have failed before: do not retry them.\n"
    "- Old tool outputs may be elided as `[output elided: recall(seq=N)]`; call `recall` with that "
    "seq to read one again.\n"
    "- The goal block below is current; trust it over anything older in the conversation.\n"
    "- Call `finish` when the target is reached or nothing more can be gained.";

std::string summary_block(const ContextView& v) {
  if (v.summary.empty()) return "";
  return fmt::format("## Summary of earlier turns (through event {})\n{}", v.summarized_through,
                     v.summary);
}

std::string join_system(const Layout& l, const ContextView& v, int64_t omitted) {
  std::string s = l.rules + "\n\n" + l.goal + "\n\n" + l.ledger;
  std::string sum = summary_block(v);
  if (!sum.empty()) s += "\n\n" + sum;
  if (omitted > 0) {
    s += fmt::format(
        "\n\n({} older turns are left out to fit the context window; the summary and the ledger "
        "cover them)",
        omitted);
  }
  return s;
}

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

}  // namespace

std::string elision_pointer(int64_t seq) {
  return fmt::format("[output elided: recall(seq={})]", seq);
}

std::string system_rules(const State& state) {
  std::string s = kRules;
  const json& rules =
      state.task.is_object() && state.task.contains("rules") ? state.task.at("rules") : json();
  if (rules.is_string() && !rules.get<std::string>().empty()) {
    s += "\nTask rules: " + rules.get<std::string>();
  } else if (rules.is_array()) {
    for (const json& r : rules) {
      if (r.is_string()) s += "\n- " + r.get<std::string>();
    }
  }
  return s;
}

std::string task_message(const State& state) {
  std::string s = "Task";
  const json& t = state.task;
  if (t.is_object()) {
    if (t.contains("name") && t.at("name").is_string()) s += ": " + t.at("name").get<std::string>();
    if (t.contains("description") && t.at("description").is_string()) {
      s += "\n" + t.at("description").get<std::string>();
    }
    for (const char* key : {"editable", "editable_files"}) {
      if (t.contains(key) && t.at(key).is_array() && !t.at(key).empty()) {
        s += "\nEditable files:";
        for (const json& f : t.at(key)) {
          if (f.is_string()) s += " " + f.get<std::string>();
        }
        break;
      }
    }
  }
  s += "\nWork towards the goal in the system message. Start by reading the files.";
  return s;
}

Layout make_layout(const State& state, const std::vector<Event>& events,
                   const ContextConfig& config, const json& tools, int64_t summarized_through) {
  Layout l;
  l.rules = system_rules(state);
  l.goal = render_goal_block(state);
  LedgerViewOptions lo;
  lo.best_n = config.ledger_best;
  lo.recent_m = config.ledger_recent;
  lo.max_tokens = std::max<int64_t>(256, config.frac(config.max_ledger));
  lo.direction = state.goal.direction;
  l.ledger = render_ledger_view(state.ledger, lo);
  l.kickoff = json{{"role", "user"}, {"content", task_message(state)}};
  l.units = build_units(events, summarized_through);
  l.ratio = fit_token_ratio(events);
  l.tools_tokens = tools.is_array() && !tools.empty() ? estimate_text_tokens(tools.dump()) : 0;
  return l;
}

namespace {

// The content a message is sent with (elided or cut), or nullopt when it goes as logged; its
// tokens.
struct Shown {
  std::optional<std::string> content;
  int64_t tokens = 0;
};

Shown shown(const TranscriptMessage& m, int64_t elided_through, const ContextConfig& config) {
  Shown s;
  s.tokens = m.tokens;
  if (!m.tool_output) return s;
  if (m.seq <= elided_through && m.content_bytes > config.elide_min_bytes) {
    s.content = elision_pointer(m.seq);
  } else {
    const int64_t output_cap = std::max<int64_t>(200, config.frac(0.15));
    if (m.content_tokens <= output_cap) return s;
    s.content =
        cap_output(m.message.at("content").get_ref<const std::string&>(), m.seq, output_cap);
  }
  s.tokens = m.tokens - m.content_tokens + estimate_text_tokens(*s.content);
  return s;
}

}  // namespace

json unit_messages(const Unit& unit, int64_t elided_through, const ContextConfig& config) {
  json out = json::array();
  for (const TranscriptMessage& m : unit.messages) {
    Shown s = shown(m, elided_through, config);
    json msg = m.message;
    if (s.content) msg["content"] = std::move(*s.content);
    out.push_back(std::move(msg));
  }
  return out;
}

int64_t unit_tokens(const Unit& unit, int64_t elided_through, const ContextConfig& config) {
  int64_t t = 0;
  for (const TranscriptMessage& m : unit.messages) t += shown(m, elided_through, config).tokens;
  return t;
}

Prompt assemble(const Layout& l, const ContextView& v, const ContextConfig& config,
                bool enforce_hard_cap, bool with_messages) {
  Prompt p;
  p.ratio = l.ratio;
  p.summarized_through = v.summarized_through;
  p.elided_through = v.elided_through;
  p.units_total = static_cast<int64_t>(l.units.size());

  std::vector<int64_t> tokens;
  tokens.reserve(l.units.size());
  for (const Unit& u : l.units) tokens.push_back(unit_tokens(u, v.elided_through, config));

  // Fixed part: system (with room for the omission note) + task message + tools.
  const int64_t kickoff_tokens = estimate_message_tokens(l.kickoff);
  const int64_t fixed_raw =
      3 + l.tools_tokens + kickoff_tokens +
      estimate_message_tokens(json{{"role", "system"}, {"content", join_system(l, v, 0)}});
  size_t first = 0;  // first unit included
  if (enforce_hard_cap) {
    const int64_t limit = config.hard_tokens();
    int64_t total = calibrated(fixed_raw + 40, l.ratio);  // 40: the omission note
    size_t i = tokens.size();
    while (i > 0) {
      int64_t next = total + calibrated(tokens[i - 1], l.ratio);
      if (next > limit && i != tokens.size()) break;  // always keep the newest unit
      total = next;
      --i;
    }
    first = i;
  }
  p.units_omitted = static_cast<int64_t>(first);

  json system{{"role", "system"}, {"content", join_system(l, v, p.units_omitted)}};
  p.tokens_raw = 3 + l.tools_tokens + kickoff_tokens + estimate_message_tokens(system);
  for (size_t i = first; i < tokens.size(); ++i) p.tokens_raw += tokens[i];
  p.tokens_estimate = calibrated(p.tokens_raw, l.ratio);
  if (!with_messages) return p;
  p.messages.push_back(std::move(system));
  p.messages.push_back(l.kickoff);
  for (size_t i = first; i < l.units.size(); ++i) {
    for (const TranscriptMessage& m : l.units[i].messages) {
      Shown s = shown(m, v.elided_through, config);
      if (!s.content) {
        p.messages.push_back(m.message);
      } else {
        json msg = m.message;
        msg["content"] = std::move(*s.content);
        p.messages.push_back(std::move(msg));
      }
    }
  }
  return p;
}

Prompt build_prompt(const State& state, const std::vector<Event>& events,
                    const ContextConfig& config, const json& tools) {
  CompactionLog c = read_compaction_log(events);
  ContextView v{c.summary, c.summarized_through, c.elided_through};
  Layout l = make_layout(state, events, config, tools, c.summarized_through);
  return assemble(l, v, config, /*enforce_hard_cap=*/true);
}

}  // namespace marathon::context
