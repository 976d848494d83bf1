#include "context/prompt_builder.h"

#include <fmt/format.h>

#include "context/goal_block.h"
#include "context/ledger_view.h"
#include "context/token_estimate.h"
#include "core/compaction_log.h"
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
    "- The run state at the end of the conversation (the ledger and the goal block) is rebuilt "
    "every turn: trust it over anything older in the conversation.\n"
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

// The task message with the installed summary after it: both change only at a compaction.
std::string join_kickoff(const Layout& l, const ContextView& v) {
  std::string s = l.kickoff.at("content").get<std::string>();
  if (!v.summary.empty()) s += "\n\n" + summary_block(v);
  return s;
}

// The live tail: what changes from step to step, last so the prefix before it stays cacheable.
std::string join_tail(const Layout& l, int64_t omitted) {
  std::string s = l.ledger + "\n\n" + l.goal;
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
    // run.created records the task's files under "files" (goal/task_spec.h); hand-built tasks
    // name them at the top.
    const json& files = t.contains("files") && t.at("files").is_object() ? t.at("files") : t;
    for (const char* key : {"editable", "editable_files"}) {
      if (files.contains(key) && files.at(key).is_array() && !files.at(key).empty()) {
        s += "\nEditable files:";
        for (const json& f : files.at(key)) {
          if (f.is_string()) s += " " + f.get<std::string>();
        }
        s += " (write_file and edit_file also write under scratch/, never part of a candidate)";
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
  l.ratio = state.token_fit.ratio();
  l.tools_tokens = cache.tools_tokens();
  l.summary = &state.compaction.summary;
  l.summary_tokens = cache.summary_tokens(state.compaction);
  return l;
}

namespace {

// estimate_message_tokens of the messages join_kickoff and join_tail build, from the parts (the
// parts are joined by blank lines, and an estimate never spans a newline).
int64_t kickoff_tokens(const Layout& l, const ContextView& v) {
  int64_t t = l.kickoff_tokens;
  if (!v.summary.empty()) {
    const std::string block = summary_block(ContextView{"", v.summarized_through, 0});
    const int64_t summary =
        l.summary && *l.summary == v.summary ? l.summary_tokens : estimate_text_tokens(v.summary);
    t += 2 + estimate_text_tokens(block) + summary;
  }
  return t;
}

int64_t tail_tokens(const Layout& l, int64_t omitted) {
  int64_t t = 4 + l.ledger_tokens + 2 + l.goal_tokens;
  if (omitted > 0) t += 2 + estimate_text_tokens(omission_note(omitted));
  return t;
}

// The newest unit is a turn the provider paused: the prompt ends with it, with no live tail, so the
// model carries on from it (the newest unit is always sent).
bool ends_with_paused_turn(const Layout& l) {
  return !l.units.empty() && l.units.back().paused_turn;
}

int64_t fixed_tokens(const Layout& l, const ContextView& v, int64_t omitted) {
  return 3 + l.tools_tokens + 4 + l.rules_tokens + kickoff_tokens(l, v) +
         (ends_with_paused_turn(l) ? 0 : tail_tokens(l, omitted));
}

}  // namespace

Prompt assemble(const Layout& l, const ContextView& v, const ContextConfig& config,
                bool enforce_hard_cap) {
  Prompt p;
  p.ratio = l.ratio;
  p.summarized_through = v.summarized_through;
  p.elided_through = v.elided_through;
  p.units_total = static_cast<int64_t>(l.units.size());

  // Fixed part: tools, system, task message (and summary), the live tail (with room for the
  // omission note).
  const int64_t fixed_raw = fixed_tokens(l, v, 0);
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
  p.tokens_raw = fixed_tokens(l, v, p.units_omitted) + units_raw;
  p.tokens_estimate = calibrated(p.tokens_raw, l.ratio);
  return p;
}

Prompt build_prompt(PromptCache& cache, const State& state, const std::vector<Event>& events) {
  cache.update(state, events);
  const CompactionLog& c = state.compaction;
  const ContextView v{c.summary, c.summarized_through, c.elided_through};
  const Layout l = make_layout(state, cache);
  Prompt p = assemble(l, v, cache.config(), /*enforce_hard_cap=*/true);

  p.messages = cache.unit_messages(static_cast<size_t>(p.units_omitted), v.elided_through);
  auto& messages = p.messages.get_ref<json::array_t&>();
  messages[0] = json{{"role", "system"}, {"content", l.rules}};
  messages[1] = json{{"role", "user"}, {"content", join_kickoff(l, v)}};
  const bool tail = !ends_with_paused_turn(l);
  if (tail) {
    messages.back() = json{{"role", "user"}, {"content", join_tail(l, p.units_omitted)}};
  } else {
    messages.pop_back();  // the paused turn goes back last, as it is
  }
  // Cache breakpoints: the end of the stable prefix (system, task and summary), the end of the
  // previous step's transcript (where the last request's cache ends) and the end of this one's.
  const int64_t last_unit = static_cast<int64_t>(messages.size()) - (tail ? 2 : 1);
  p.cache_breakpoints = {0, 1};
  if (l.units.size() > static_cast<size_t>(p.units_omitted)) {
    const int64_t previous_end = last_unit - static_cast<int64_t>(l.units.back().messages.size());
    if (previous_end > 1) p.cache_breakpoints.push_back(previous_end);
    p.cache_breakpoints.push_back(last_unit);
  }
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
  if (tail) {
    sha.add(",");
    sha.add(messages.back().dump());
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
