#include "context/prompt_builder.h"

#include <fmt/format.h>

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
  return cut + fmt::format("\n[output cut to fit the context window; full output: recall(seq={})]",
                           seq);
}

}  // namespace

std::string elision_pointer(int64_t seq) {
  return fmt::format("[output elided: recall(seq={})]", seq);
}

std::string system_rules(const State& state) {
  std::string s = kRules;
  const json& rules = state.task.is_object() && state.task.contains("rules")
                          ? state.task.at("rules")
                          : json();
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

json unit_messages(const Unit& unit, int64_t elided_through, const ContextConfig& config) {
  json out = json::array();
  const int64_t output_cap = std::max<int64_t>(200, config.frac(0.15));
  for (const TranscriptMessage& m : unit.messages) {
    if (!m.tool_output) {
      out.push_back(m.message);
      continue;
    }
    const std::string& content = m.message.at("content").get_ref<const std::string&>();
    json msg = m.message;
    if (m.seq <= elided_through && static_cast<int64_t>(content.size()) > config.elide_min_bytes) {
      msg["content"] = elision_pointer(m.seq);
    } else {
      std::string capped = cap_output(content, m.seq, output_cap);
      if (capped.size() != content.size()) msg["content"] = std::move(capped);
    }
    out.push_back(std::move(msg));
  }
  return out;
}

Prompt assemble(const Layout& l, const ContextView& v, const ContextConfig& config,
                bool enforce_hard_cap) {
  Prompt p;
  p.ratio = l.ratio;
  p.summarized_through = v.summarized_through;
  p.elided_through = v.elided_through;
  p.units_total = static_cast<int64_t>(l.units.size());

  std::vector<json> unit_msgs;
  std::vector<int64_t> unit_tokens;
  unit_msgs.reserve(l.units.size());
  for (const Unit& u : l.units) {
    json msgs = unit_messages(u, v.elided_through, config);
    int64_t t = 0;
    for (const json& m : msgs) t += estimate_message_tokens(m);
    unit_msgs.push_back(std::move(msgs));
    unit_tokens.push_back(t);
  }

  // Fixed part: system (with room for the omission note) + task message + tools.
  json kickoff = l.kickoff;
  const int64_t fixed_raw = 3 + estimate_message_tokens(json{
                                    {"role", "system"}, {"content", join_system(l, v, 0)}}) +
                            estimate_message_tokens(kickoff) + l.tools_tokens;
  size_t first = 0;  // first unit included
  if (enforce_hard_cap) {
    const int64_t limit = config.hard_tokens();
    int64_t total = calibrated(fixed_raw + 40, l.ratio);  // 40: the omission note
    size_t i = unit_msgs.size();
    while (i > 0) {
      int64_t next = total + calibrated(unit_tokens[i - 1], l.ratio);
      if (next > limit && i != unit_msgs.size()) break;  // always keep the newest unit
      total = next;
      --i;
    }
    first = i;
  }
  p.units_omitted = static_cast<int64_t>(first);

  p.messages.push_back(
      json{{"role", "system"}, {"content", join_system(l, v, p.units_omitted)}});
  p.messages.push_back(std::move(kickoff));
  for (size_t i = first; i < unit_msgs.size(); ++i) {
    for (json& m : unit_msgs[i]) p.messages.push_back(std::move(m));
  }
  p.tokens_raw = 3 + l.tools_tokens;
  for (const json& m : p.messages) p.tokens_raw += estimate_message_tokens(m);
  p.tokens_estimate = calibrated(p.tokens_raw, l.ratio);
  return p;
}

Prompt build_prompt(const State& state, const std::vector<Event>& events, const ContextConfig& config,
                    const json& tools) {
  CompactionLog c = read_compaction_log(events);
  ContextView v{c.summary, c.summarized_through, c.elided_through};
  Layout l = make_layout(state, events, config, tools, c.summarized_through);
  return assemble(l, v, config, /*enforce_hard_cap=*/true);
}

}  // namespace marathon::context
