#include "context/prompt_builder.h"

#include <fmt/format.h>

#include "context/compaction_log.h"
#include "context/goal_block.h"
#include "context/ledger_view.h"
#include "context/token_estimate.h"
#include "core/sha256_stream.h"

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

// The installed summary as the system message shows it: a heading line, then the text.
std::string summary_block(const ContextView& v) {
  return fmt::format("## Summary of earlier turns (through event {})\n{}", v.summarized_through,
                     v.summary);
}

std::string omission_note(int64_t omitted) {
  return fmt::format(
      "({} older turns are left out to fit the context window; the summary and the ledger cover "
      "them)",
      omitted);
}

std::string join_system(const Layout& l, const ContextView& v, int64_t omitted) {
  std::string s = l.rules + "\n\n" + l.goal + "\n\n" + l.ledger;
  if (!v.summary.empty()) s += "\n\n" + summary_block(v);
  if (omitted > 0) s += "\n\n" + omission_note(omitted);
  return s;
}

}  // namespace

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

Layout make_layout(const State& state, PromptCache& cache) {
  const ContextConfig& config = cache.config();
  Layout l;
  l.rules = system_rules(state);
  l.rules_tokens = estimate_text_tokens(l.rules);
  l.goal = render_goal_block(state);
  l.goal_tokens = estimate_text_tokens(l.goal);
  LedgerViewOptions lo;
  lo.best_n = config.ledger_best;
  lo.recent_m = config.ledger_recent;
  lo.max_tokens = std::max<int64_t>(256, config.frac(config.max_ledger));
  lo.direction = state.goal.direction;
  LedgerView& ledger = cache.ledger_view(lo);
  l.ledger = ledger.render(state.ledger);
  l.ledger_tokens = ledger.tokens();
  l.kickoff = json{{"role", "user"}, {"content", task_message(state)}};
  l.kickoff_tokens = estimate_message_tokens(l.kickoff);
  l.units = cache.units();
  l.ratio = cache.ratio();
  l.tools_tokens = cache.tools_tokens();
  l.summary = &cache.compaction_log().summary;
  l.summary_tokens = cache.summary_tokens();
  return l;
}

namespace {

// estimate_message_tokens of the system message join_system(l, v, omitted) builds, from the parts.
int64_t system_tokens(const Layout& l, const ContextView& v, int64_t omitted) {
  int64_t t = 4 + l.rules_tokens + 2 + l.goal_tokens + 2 + l.ledger_tokens;
  if (!v.summary.empty()) {
    const std::string block = summary_block(ContextView{"", v.summarized_through, 0});
    const int64_t summary =
        l.summary && *l.summary == v.summary ? l.summary_tokens : estimate_text_tokens(v.summary);
    t += 2 + estimate_text_tokens(block) + summary;
  }
  if (omitted > 0) t += 2 + estimate_text_tokens(omission_note(omitted));
  return t;
}

}  // namespace

Prompt assemble(const Layout& l, const ContextView& v, const ContextConfig& config,
                bool enforce_hard_cap) {
  Prompt p;
  p.ratio = l.ratio;
  p.summarized_through = v.summarized_through;
  p.elided_through = v.elided_through;
  p.units_total = static_cast<int64_t>(l.units.size());

  // Fixed part: system (with room for the omission note) + task message + tools.
  const int64_t fixed_raw = 3 + l.tools_tokens + l.kickoff_tokens + system_tokens(l, v, 0);
  size_t first = 0;  // first unit included
  int64_t units_raw = 0;
  if (enforce_hard_cap) {
    const int64_t limit = config.hard_tokens();
    int64_t total = calibrated(fixed_raw + 40, l.ratio);  // 40: the omission note
    size_t i = l.units.size();
    while (i > 0) {
      const int64_t t = l.units[i - 1].tokens_at(v.elided_through);
      int64_t next = total + calibrated(t, l.ratio);
      if (next > limit && i != l.units.size()) break;  // always keep the newest unit
      total = next;
      units_raw += t;
      --i;
    }
    first = i;
  } else {
    for (const PreparedUnit& u : l.units) units_raw += u.tokens_at(v.elided_through);
  }
  p.units_omitted = static_cast<int64_t>(first);
  p.tokens_raw =
      3 + l.tools_tokens + l.kickoff_tokens + system_tokens(l, v, p.units_omitted) + units_raw;
  p.tokens_estimate = calibrated(p.tokens_raw, l.ratio);
  return p;
}

Prompt build_prompt(PromptCache& cache, const State& state, const std::vector<Event>& events) {
  cache.update(events);
  const CompactionLog& c = cache.compaction_log();
  const ContextView v{c.summary, c.summarized_through, c.elided_through};
  const Layout l = make_layout(state, cache);
  Prompt p = assemble(l, v, cache.config(), /*enforce_hard_cap=*/true);

  p.messages = cache.unit_messages(static_cast<size_t>(p.units_omitted), v.elided_through);
  auto& messages = p.messages.get_ref<json::array_t&>();
  messages[0] = json{{"role", "system"}, {"content", join_system(l, v, p.units_omitted)}};
  messages[1] = l.kickoff;
  // The sha256 of messages.dump() from the pieces: "[" m0 "," m1 ... "]" is what dump() writes, and
  // every unit message was serialised once, when the cache prepared it.
  Sha256Stream sha;
  sha.add("[");
  sha.add(messages[0].dump());
  sha.add(",");
  sha.add(messages[1].dump());
  for (size_t i = static_cast<size_t>(p.units_omitted); i < l.units.size(); ++i) {
    for (const PreparedMessage& m : l.units[i].messages) {
      sha.add(",");
      sha.add(m.sent_dump(v.elided_through));
    }
  }
  sha.add("]");
  p.sha256 = sha.hex();
  return p;
}

Prompt build_prompt(const State& state, const std::vector<Event>& events,
                    const ContextConfig& config, const json& tools) {
  PromptCache cache(config, tools);
  return build_prompt(cache, state, events);
}

}  // namespace marathon::context
