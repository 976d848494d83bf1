#include "policy/search_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "goal/task_spec.h"

namespace marathon {

namespace {

constexpr double kFailed = -std::numeric_limits<double>::infinity();

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double space_size(const std::vector<int>& dims) {
  double n = 1;
  for (int d : dims) n *= d;
  return n;
}

// The start, then distinct seeded random configurations, n in all (fewer if the grid is small).
std::vector<KnobConfig> initial_sample(const std::vector<int>& dims, const KnobConfig& start, int n,
                                       uint64_t seed) {
  std::vector<KnobConfig> out = {start};
  std::set<KnobConfig> seen = {start};
  for (uint64_t i = 0; static_cast<int>(out.size()) < n && i < 64u * n; ++i) {
    KnobConfig c(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      c[d] = static_cast<int>(splitmix64(seed ^ (i * 0x100000001b3ULL + d)) % dims[d]);
    }
    if (seen.insert(c).second) out.push_back(c);
  }
  return out;
}

// Up to k configurations nearest to `from` (grid steps: one knob one position along its list),
// skipping `excluded`, in breadth-first order (knob order, the smaller value first).
std::vector<KnobConfig> neighbours(const std::vector<int>& dims, const KnobConfig& from, size_t k,
                                   const std::set<KnobConfig>& excluded) {
  std::vector<KnobConfig> out;
  std::set<KnobConfig> visited = {from};
  std::deque<KnobConfig> queue = {from};
  while (!queue.empty() && out.size() < k && visited.size() < 50000) {
    KnobConfig c = queue.front();
    queue.pop_front();
    for (size_t d = 0; d < dims.size(); ++d) {
      for (int step : {-1, +1}) {
        KnobConfig n = c;
        n[d] += step;
        if (n[d] < 0 || n[d] >= dims[d] || !visited.insert(n).second) continue;
        queue.push_back(n);
        if (!excluded.count(n) && out.size() < k) out.push_back(n);
      }
    }
  }
  return out;
}

}  // namespace

SearchStep plan_search(const std::vector<int>& dims, const KnobConfig& start,
                       const std::map<KnobConfig, double>& results, int budget,
                       const SearchOptions& o) {
  const int eta = std::max(2, o.eta);
  SearchStep step;
  std::vector<KnobConfig> pool;  // every configuration the plan has scheduled, all brackets
  std::set<KnobConfig> in_pool;
  auto value = [&](const KnobConfig& c) {
    auto it = results.find(c);
    return it == results.end() ? kFailed : it->second;
  };
  auto done = [&](const std::string& why) {
    step.next.reset();
    step.why_done = why;
    return step;
  };

  int n0 = o.initial > 0 ? o.initial : std::clamp(budget / 4, 2, 16);
  n0 = static_cast<int>(std::min<double>(n0, space_size(dims)));
  for (int bracket = 0;; ++bracket) {
    step.bracket = bracket;
    step.round = 0;
    step.survivors = 0;
    std::vector<KnobConfig> field;  // this bracket's configurations, in order
    // Schedules c; true when it still needs an evaluation (then it is the next step).
    auto schedule = [&](const KnobConfig& c) {
      pool.push_back(c);
      in_pool.insert(c);
      field.push_back(c);
      return !results.count(c);
    };
    // Round 0: the starter's configuration and a seeded sample; a later bracket samples afresh
    // (its own seed) among the configurations no earlier bracket scheduled.
    std::vector<KnobConfig> sample;
    if (bracket == 0) {
      sample = initial_sample(dims, start, n0, o.seed);
    } else {
      uint64_t seed = splitmix64(o.seed + static_cast<uint64_t>(bracket));
      const int draws = n0 + 1 + static_cast<int>(in_pool.size());
      for (const KnobConfig& c : initial_sample(dims, start, draws, seed)) {
        if (!in_pool.count(c) && static_cast<int>(sample.size()) < n0) sample.push_back(c);
      }
      if (sample.empty()) return done("no unexplored configuration is left");
    }
    for (const KnobConfig& c : sample) {
      if (static_cast<int>(pool.size()) >= budget) return done("evaluation budget spent");
      if (schedule(c)) {
        step.next = c;
        return step;
      }
    }

    // Ranking within the bracket: best value first; ties go to the configuration scheduled first.
    auto ranked = [&] {
      std::vector<size_t> idx(field.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(),
                       [&](size_t a, size_t b) { return value(field[a]) > value(field[b]); });
      return idx;
    };
    auto best_value = [&] {
      double b = kFailed;
      for (const auto& c : field) b = std::max(b, value(c));
      return b;
    };

    int survivors = std::max(1, (static_cast<int>(field.size()) + eta - 1) / eta);
    double best_before = best_value();
    int rounds_without_gain = 0;
    for (int r = 1;; ++r) {
      step.round = r;
      step.survivors = survivors;
      std::vector<size_t> order = ranked();
      const size_t per_survivor = static_cast<size_t>(std::min(std::pow(eta, r), 1024.0));
      std::vector<KnobConfig> batch;
      std::set<KnobConfig> excluded = in_pool;
      for (int s = 0; s < survivors && s < static_cast<int>(order.size()); ++s) {
        for (KnobConfig& n : neighbours(dims, field[order[s]], per_survivor, excluded)) {
          excluded.insert(n);
          batch.push_back(std::move(n));
        }
      }
      if (batch.empty()) break;  // no unexplored neighbour of the survivors: the next bracket
      for (const KnobConfig& c : batch) {
        if (static_cast<int>(pool.size()) >= budget) return done("evaluation budget spent");
        if (schedule(c)) {
          step.next = c;
          return step;
        }
      }
      double best_after = best_value();
      if (survivors == 1) {
        rounds_without_gain = best_after > best_before ? 0 : rounds_without_gain + 1;
        if (rounds_without_gain >= 2) break;  // converged: the next bracket
      }
      best_before = best_after;
      survivors = std::max(1, (survivors + eta - 1) / eta);
    }
  }
}

std::map<KnobConfig, double> search_results(const std::vector<Knob>& knobs, const State& state) {
  std::map<KnobConfig, double> out;
  for (const LedgerEntry& l : state.ledger) {
    if (l.kind != LedgerKind::kAttempt) continue;
    std::optional<KnobConfig> c = parse_config_text(knobs, l.text);
    if (!c || out.count(*c)) continue;
    bool counts = l.correct.value_or(false) && l.score.has_value() && l.failure.empty();
    double score = counts ? *l.score : 0;
    // A re-measured configuration counts by its median; one incorrect on fresh inputs, as failed.
    if (std::optional<Figure> f = counts ? figure_of(state, l.candidate) : std::nullopt) {
      if (f->failed) counts = false;
      if (f->samples > 0) score = f->value;
    }
    out[*c] = counts ? -better_first_key(state.goal.direction, score) : kFailed;
  }
  return out;
}

SearchPolicy::SearchPolicy(std::map<std::string, std::string> files, SearchOptions options)
    : files_(std::move(files)), options_(options) {
  knobs_ = parse_knobs(files_);
  if (knobs_.empty()) {
    throw std::invalid_argument(
        "the search policy found no `marathon:knob` line in the task's editable files "
        "(see docs/tasks.md, \"Tunable knobs\")");
  }
}

std::map<std::string, std::string> SearchPolicy::render(const KnobConfig& config) const {
  std::map<std::string, std::string> values;
  for (size_t i = 0; i < knobs_.size(); ++i) values[knobs_[i].name] = knobs_[i].values[config[i]];
  std::map<std::string, std::string> out;
  for (const auto& [path, text] : files_) out[path] = set_knobs(path, text, values);
  return out;
}

int SearchPolicy::evaluation_budget(const State& state) const {
  // Each evaluation costs one write per file and the evaluate call; keep room for the final
  // write, evaluation and finish.
  const int64_t per_eval = static_cast<int64_t>(files_.size()) + 1;
  int64_t by_calls = (state.limits.max_tool_calls - per_eval - 1) / per_eval;
  if (state.limits.max_tool_calls <= 0) by_calls = 1000;
  int64_t b = std::max<int64_t>(1, by_calls);
  if (options_.max_evals > 0) b = std::min<int64_t>(b, options_.max_evals);
  return static_cast<int>(b);
}

namespace {

json tool_call(const std::string& id, const std::string& name, const json& args) {
  return {
      {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args.dump()}}}};
}

std::string score_text(double v, bool minimise) {
  if (std::isinf(v)) return "none correct";
  return fmt::format("{:.4g}", minimise ? -v : v);
}

}  // namespace

PolicyReply SearchPolicy::next(const PolicyRequest& request) {
  if (!request.state) throw std::invalid_argument("the search policy needs the run's state");
  const State& s = *request.state;
  const bool minimise = s.goal.direction == Direction::kMin;
  std::vector<int> dims;
  KnobConfig start;
  for (const Knob& k : knobs_) {
    dims.push_back(static_cast<int>(k.values.size()));
    start.push_back(k.start_index());
  }
  std::map<KnobConfig, double> results = search_results(knobs_, s);
  const int budget = evaluation_budget(s);
  SearchStep step = plan_search(dims, start, results, budget, options_);

  // The best configuration so far (first evaluated wins a tie: std::map order is not plan order,
  // so compare by value then by the ledger's order).
  std::optional<KnobConfig> best;
  double best_v = kFailed;
  std::optional<KnobConfig> last;
  std::optional<KnobConfig> run_best;  // the configuration of the run's (confirmed) best
  for (const LedgerEntry& l : s.ledger) {
    if (l.kind != LedgerKind::kAttempt) continue;
    auto c = parse_config_text(knobs_, l.text);
    if (!c) continue;
    last = c;
    double v = results.at(*c);
    if (!best || v > best_v) best = c, best_v = v;
    if (!s.best_candidate.empty() && l.candidate == s.best_candidate) run_best = c;
  }
  // With confirmation on, the best is the run's: the median that beat the others beyond noise
  // (a configuration within noise of it is a tie, not a better one).
  if (s.confirm.settings.n > 0 && run_best && s.best_score) {
    best = run_best;
    best_v = -better_first_key(s.goal.direction, *s.best_score);
  }
  // The spread of the best, for the texts ("4.9 (median of 3 re-measurements, ...)").
  auto best_value_text = [&](double v) {
    std::optional<Figure> f = best_figure(s);
    if (f && best == run_best && s.confirm.settings.n > 0) {
      return figure_text(*f, [](double x) { return fmt::format("{:.4g}", x); });
    }
    return score_text(v, minimise);
  };

  // Stuck guard: evaluate calls that left no attempt in the ledger (e.g. a failing tool).
  int64_t evaluate_calls = 0, attempts = 0;
  if (auto it = s.tool_calls_by_name.find("evaluate"); it != s.tool_calls_by_name.end()) {
    evaluate_calls = it->second;
  }
  for (const auto& l : s.ledger) attempts += l.kind == LedgerKind::kAttempt;
  const int64_t per_eval = static_cast<int64_t>(files_.size()) + 1;
  const int64_t room = s.limits.max_tool_calls > 0 ? s.limits.max_tool_calls - s.used.tool_calls
                                                   : std::numeric_limits<int64_t>::max();

  PolicyReply reply;
  reply.provider = "search";
  reply.model = fmt::format("successive-halving(eta={})", std::max(2, options_.eta));
  reply.finish_reason = "tool_calls";
  json calls = json::array();
  const std::string id_base = fmt::format("search-{}", s.last_seq);
  auto evaluate = [&](const KnobConfig& c, const std::string& content) {
    int i = 0;
    for (const auto& [path, text] : render(c)) {
      calls.push_back(tool_call(fmt::format("{}-w{}", id_base, i++), "write_file",
                                {{"path", path}, {"content", text}}));
    }
    calls.push_back(tool_call(id_base + "-e", "evaluate", {{"strategy", config_text(knobs_, c)}}));
    reply.message = {{"role", "assistant"}, {"content", content}, {"tool_calls", calls}};
  };
  auto finish = [&](const std::string& why) {
    std::string summary =
        best && !std::isinf(best_v)
            ? fmt::format("Search finished ({}): best {} = {} after {} evaluations.", why,
                          config_text(knobs_, *best), best_value_text(best_v), results.size())
            : fmt::format("Search finished ({}): no correct configuration in {} evaluations.", why,
                          results.size());
    calls.push_back(tool_call(id_base + "-f", "finish", {{"summary", summary}}));
    reply.message = {{"role", "assistant"}, {"content", summary}, {"tool_calls", calls}};
  };

  std::string why_stop;
  if (evaluate_calls > attempts + 3) {
    why_stop =
        fmt::format("{} evaluate calls left no result in the ledger", evaluate_calls - attempts);
  } else if (room < per_eval + per_eval + 1) {
    why_stop = "tool-call budget nearly spent";
  } else if (!step.next) {
    why_stop = step.why_done;
  }

  if (why_stop.empty()) {
    std::string best_txt = best ? fmt::format("best so far {} = {}", config_text(knobs_, *best),
                                              best_value_text(best_v))
                                : "nothing evaluated yet";
    std::string stage =
        step.round == 0 ? "round 0 (initial sample)"
                        : fmt::format("round {} ({} survivor{}, neighbours of each)", step.round,
                                      step.survivors, step.survivors == 1 ? "" : "s");
    if (step.bracket > 0) {
      stage = fmt::format(
          "bracket {} (the previous converged; a fresh sample of configurations "
          "not tried yet), {}",
          step.bracket + 1, stage);
    }
    evaluate(*step.next, fmt::format("Successive halving, {}: trying {}; {}.", stage,
                                     config_text(knobs_, *step.next), best_txt));
    return reply;
  }
  // Done: leave the best configuration in the workspace (its evaluation is a cache hit), then
  // finish.
  if (best && !std::isinf(best_v) && last != best && room >= per_eval + 1) {
    evaluate(*best, fmt::format("Search done ({}). Restoring the best configuration {} = {}.",
                                why_stop, config_text(knobs_, *best), best_value_text(best_v)));
    return reply;
  }
  // On a GPU task, profile the best configuration once before finishing (the report and the
  // dashboard then show where its time goes); the profile is not an evaluation.
  const bool profiled = s.tool_calls_by_name.contains("profile");
  if (best && !std::isinf(best_v) && s.task.value("needs_gpu", false) && !profiled && room >= 2) {
    calls.push_back(tool_call(id_base + "-p", "profile", json::object()));
    reply.message = {
        {"role", "assistant"},
        {"content", fmt::format("Search done ({}). Profiling the best configuration {} = {}.",
                                why_stop, config_text(knobs_, *best), best_value_text(best_v))},
        {"tool_calls", calls}};
    return reply;
  }
  finish(why_stop);
  return reply;
}

std::unique_ptr<Policy> make_search_policy(const State& state, SearchOptions options) {
  namespace fs = std::filesystem;
  const std::string task_dir = state.config.value("task_dir", "");
  const json& files = state.task.value("files", json::object());
  if (task_dir.empty() || !files.is_object()) {
    throw std::invalid_argument("the search policy needs the run's task (task_dir and files)");
  }
  fs::path starter = fs::path(task_dir) / files.value("starter_dir", "starter");
  std::vector<std::string> editable = files.value("editable", std::vector<std::string>{});
  std::map<std::string, std::string> texts;
  for (const std::string& rel : files.value("starter", std::vector<std::string>{})) {
    bool is_editable = false;
    for (const auto& g : editable) is_editable = is_editable || glob_match(g, rel);
    if (!is_editable) continue;
    std::ifstream in(starter / rel, std::ios::binary);
    if (!in) {
      throw std::invalid_argument("search policy: cannot read starter file " +
                                  (starter / rel).string());
    }
    std::stringstream ss;
    ss << in.rdbuf();
    if (!parse_knobs(rel, ss.str()).empty()) texts[rel] = ss.str();
  }
  if (texts.empty()) {
    throw std::invalid_argument(fmt::format(
        "task {} declares no knobs in its editable starter files ({}); the search policy needs "
        "`marathon:knob` lines (docs/tasks.md)",
        state.task.value("name", "?"), starter.string()));
  }
  // Branches of one run (loop/branches.h) explore different regions: each samples its own
  // initial configurations (the starter's is shared, and the shared result cache evaluates it
  // once).
  if (int branch = state.config.value("branch", 0); branch > 0) {
    options.seed = splitmix64(options.seed + static_cast<uint64_t>(branch));
  }
  return std::make_unique<SearchPolicy>(std::move(texts), options);
}

}  // namespace marathon
