// marathon status RUN_DIR [--json]: the run's state, folded from its log (read-only; safe while
// the run is writing).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/usage.h"
#include "core/event_store.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "core/terminal_text.h"
#include "eval/executor_usage.h"
#include "loop/branches.h"

namespace marathon::cli {
namespace {

struct StatusOptions {
  std::string run_dir;
  bool json = false;
  bool verify = false;
};

std::string num(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "none"; }

std::string limit(double used, double max, const char* unit = "") {
  if (max <= 0) return fmt::format("{:.6g}{}", used, unit);
  return fmt::format("{:.6g}{} / {:.6g}{}", used, unit, max, unit);
}

std::string human(const State& s) {
  std::string out;
  auto line = [&](const std::string& l) { out += l + "\n"; };
  std::string state = s.done ? "finished (" + s.finish_reason + ")" : s.paused ? "paused" : "open";
  line(fmt::format("run        {}  [{}]", s.run_id.empty() ? "(no run.created)" : s.run_id, state));
  if (!s.forked_from.empty())
    line(fmt::format("forked     from {} at seq {}", s.forked_from, s.forked_at_seq));
  line(fmt::format("goal       {} [{}]", s.goal.objective.empty() ? "(none)" : s.goal.objective,
                   to_string(s.goal.status)));
  if (!s.goal.metric.empty()) {
    line(fmt::format("metric     {} ({}), target {}", s.goal.metric, to_string(s.goal.direction),
                     num(s.goal.target)));
  }
  line(fmt::format(
      "best       {}{}   baseline {}", num(s.best_score),
      s.best_candidate.empty() ? "" : " (candidate " + s.best_candidate.substr(0, 12) + ")",
      num(s.baseline_score)));
  // Confirmed best (docs/evaluation.md): the spread behind the best, ties, the baseline verdict.
  auto short_num = [](double v) { return fmt::format("{:.6g}", v); };
  if (std::optional<Figure> f = best_figure(s)) line("confirmed  " + figure_text(*f, short_num));
  if (std::string t = ties_text(s, short_num); !t.empty()) line("tie        " + t);
  if (std::string b = baseline_text(s, short_num); !b.empty()) line("baseline   " + b);
  for (const std::string& cand : s.confirm.pending) {
    if (std::optional<Figure> f = figure_of(s, cand)) {
      line("confirming " + cand.substr(0, 12) + " " + figure_text(*f, short_num));
    }
  }
  line(fmt::format("evals      {} ({} executed, {} since the last improvement)", s.evaluations,
                   s.evaluations_executed, s.evals_since_improvement));
  if (s.confirm.remeasured > 0) {
    line(fmt::format("remeasured {} ({:.1f} s; at most {} of each candidate)", s.confirm.remeasured,
                     s.confirm.remeasure_s, s.confirm.settings.n));
  }
  const BudgetUsed& u = s.used;
  const BudgetLimits& l = s.limits;
  line(fmt::format("budget     tool calls {}, model calls {}, tokens {}, cost {}, wall {}, gpu {}",
                   limit(double(u.tool_calls), double(l.max_tool_calls)), u.model_calls,
                   limit(double(u.prompt_tokens + u.completion_tokens), double(l.max_tokens)),
                   limit(u.cost_usd, l.max_cost_usd, " USD"), limit(u.wall_s, l.max_wall_s, " s"),
                   limit(u.gpu_s, l.max_gpu_s, " s")));
  if (std::string note = replay_spend_note(s); !note.empty()) line("replay     " + note);
  if (u.prompt_tokens > 0) {
    line(
        fmt::format("cache      {:.1f}% of prompt tokens read from the provider's prompt cache ({} "
                    "read, {} written, {} prompt tokens)",
                    100.0 * double(u.cache_read_tokens) / double(u.prompt_tokens),
                    u.cache_read_tokens, u.cache_write_tokens, u.prompt_tokens));
  }
  line(fmt::format("ledger     {} entries; workspace {} files; compactions {}", s.ledger.size(),
                   s.workspace.size(), s.compaction.compactions));
  for (const auto& [id, f] : s.in_flight) {
    line(fmt::format("in flight  {} ({}) since seq {}", f.name, id, f.started_seq));
  }
  if (s.sandbox_disabled.empty()) {
    line("sandbox    on");
  } else {
    std::string seqs;
    for (int64_t q : s.sandbox_disabled) seqs += (seqs.empty() ? "" : ", ") + std::to_string(q);
    line(fmt::format("sandbox    OFF in {} session(s) (--unsafe-no-sandbox at seq {}): {}",
                     s.sandbox_disabled.size(), seqs, s.sandbox_disabled_reason));
  }
  line(fmt::format("events     {}", s.last_seq));
  return out;
}

std::string state_word(const State& s) {
  return s.done ? "finished (" + s.finish_reason + ")" : s.paused ? "paused" : "open";
}

// What status adds to the folded state: the executor's utilisation (from every eval.finished of
// the run, all branches') and, on branch 0 of a run with branches, every branch's state.
struct ScaleOut {
  std::vector<eval::SlotUsage> usage;
  double wall_s = 0;  // the run's active time (the longest branch's)
  std::vector<State> branches;
  int best = -1;
};

ScaleOut scale_out(const std::string& run_dir, EventStore& store, const State& s,
                   const LoadOptions& load) {
  ScaleOut out;
  eval::UsageTally tally;
  out.wall_s = s.used.wall_s;
  // Utilisation is a report, not the state: a log that cannot be read whole (a damaged event the
  // checkpoint passed over) still gets its status, without it.
  try {
    store.for_each(1, [&](const Event& e) {
      tally.add(e);
      return true;
    });
  } catch (const std::exception& e) {
    spdlog::warn("status: executor utilisation left out: {}", e.what());
  }
  int k = branch_count(s);
  if (k > 1 && s.config.value("branch", 0) == 0) {
    out.branches.push_back(s);
    for (int i = 1; i < k; ++i) {
      std::filesystem::path dir = branch_dir(run_dir, i);
      auto bs = EventStore::open((dir / "events.db").string(), EventStore::Mode::kReadOnly);
      State b = load_state(*bs, INT64_MAX, load);
      bs->for_each(1, [&](const Event& e) {
        tally.add(e);
        return true;
      });
      out.wall_s = std::max(out.wall_s, b.used.wall_s);
      out.branches.push_back(std::move(b));
    }
    out.best = best_branch(out.branches);
  }
  out.usage = tally.slots();
  return out;
}

std::string human_scale_out(const ScaleOut& x) {
  std::string out;
  if (!x.usage.empty()) {
    out += fmt::format("executor   {} (busy share of {:.1f} s active)\n",
                       eval::usage_text(x.usage, x.wall_s), x.wall_s);
  }
  if (!x.branches.empty()) {
    std::string best = "no correct evaluation yet";
    if (x.best >= 0) {
      const State& b = x.branches[size_t(x.best)];
      best = fmt::format("{} {:.6g} (branch {})", b.goal.metric, *b.best_score, x.best);
    }
    out += fmt::format("branches   {}; best over branches: {}\n", x.branches.size(), best);
    for (size_t i = 0; i < x.branches.size(); ++i) {
      const State& b = x.branches[i];
      out += fmt::format("  branch {}  [{}] best {}, {} evals ({} executed), {} tool calls\n", i,
                         state_word(b), num(b.best_score), b.evaluations, b.evaluations_executed,
                         b.used.tool_calls);
    }
  }
  return out;
}

// Only what there is: a run whose evaluations name no executor gets no key.
json json_scale_out(const ScaleOut& x) {
  json j = json::object();
  if (!x.usage.empty()) j["executor_usage"] = eval::usage_json(x.usage, x.wall_s);
  if (!x.branches.empty()) {
    json bs = json::array();
    for (size_t i = 0; i < x.branches.size(); ++i) {
      const State& b = x.branches[i];
      bs.push_back({{"branch", i},
                    {"state", state_word(b)},
                    {"best_score", b.best_score ? json(*b.best_score) : json(nullptr)},
                    {"best_candidate", b.best_candidate},
                    {"evaluations", b.evaluations},
                    {"tool_calls", b.used.tool_calls}});
    }
    j["branches"] = bs;
    j["best_branch"] = x.best >= 0 ? json(x.best) : json(nullptr);
  }
  return j;
}

int run_status(const StatusOptions& o) {
  try {
    RunDir dir = existing_run_dir(o.run_dir);
    auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kReadOnly);
    LoadOptions load;
    load.use_checkpoints = !o.verify;
    State s = load_state(*store, INT64_MAX, load);
    ScaleOut x = scale_out(o.run_dir, *store, s, load);
    if (o.json) {
      json j = to_json(s);
      j.update(json_scale_out(x));
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << terminal_safe_lines(human(s) + human_scale_out(x));
    }
    return 0;
  } catch (const StoreError& e) {
    spdlog::error("status: {}", e.what());
    return 1;
  }
}

}  // namespace

void register_status(CLI::App& app) {
  auto o = std::make_shared<StatusOptions>();
  auto* cmd = app.add_subcommand("status", "Show a run's state, folded from its event log");
  cmd->add_option("RUN_DIR", o->run_dir, "The run directory (holds events.db)")
      ->required()
      ->check(existing_run_dir_check());
  cmd->add_flag("--json", o->json, "Print the state as JSON");
  cmd->add_flag("--verify", o->verify,
                "Fold every event from the first, checking every row's checksum, instead of "
                "starting from the newest checkpoint");
  cmd->callback([o] { exit_code = run_status(*o); });
}

}  // namespace marathon::cli
