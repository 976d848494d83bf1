// SearchPolicy: tunes a task's knobs (docs/tasks.md, "Tunable knobs") with successive halving,
// no model needed.
//
// The method. Round 0 evaluates n0 configurations: the starter's own, then a seeded random sample.
// Each later round keeps the best 1/eta of everything evaluated so far (at least one survivor) and
// spends eta^r evaluations on each survivor's nearest unexplored neighbours (one knob one step
// along its list, then further): the budget per surviving configuration doubles while the field
// halves. With one survivor left, a bracket ends after two rounds without improvement, or when no
// survivor has an unexplored neighbour left. Budget left then starts the next bracket: round 0
// again on a fresh seeded sample of configurations no earlier bracket scheduled (a converged local
// search would otherwise leave the budget the user granted unspent while most of the grid is
// untried). The search stops when its evaluation budget is spent or no configuration is left
// untried; then it writes the best configuration back, evaluates it (served from the cache),
// profiles it once on a GPU task, and calls `finish`.
//
// Resumable by construction: every decision is a pure function of the State it is given. Past
// evaluations are read from the ledger (each attempt's strategy text is the configuration,
// "BLOCK=64 UNROLL=4"), so after a crash the search continues the same plan.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/state.h"
#include "policy/knobs.h"
#include "policy/policy.h"

namespace marathon {

using KnobConfig = std::vector<int>;  // one index per knob into its values

struct SearchOptions {
  int eta = 2;
  int max_evals = 0;  // 0: as many as the tool-call budget allows
  int initial = 0;    // n0; 0: from the evaluation budget (a quarter of it, 2..16)
  uint64_t seed = 0x5eed;
};

// One step of the plan: the next configuration to evaluate, or done.
struct SearchStep {
  std::optional<KnobConfig> next;
  int bracket = 0;       // 0 first; each later one restarts on configurations not yet tried
  int round = 0;         // within the bracket
  int survivors = 0;     // survivors of the previous round (0 in round 0)
  std::string why_done;  // when next is empty
};

// make_search_policy gives branch i > 0 of a run with branches (config.branch) its own seed, so
// that branches sample different initial configurations and explore different regions. Pure:
// successive halving over a grid with `dims[i]` values per knob, starting at `start`, given the
// values of the configurations evaluated so far (higher is better; -inf for a failure).
SearchStep plan_search(const std::vector<int>& dims, const KnobConfig& start,
                       const std::map<KnobConfig, double>& results, int budget,
                       const SearchOptions& options);

// Pure: the configurations evaluated so far, from the ledger's attempts (first result per
// configuration; incorrect, failed or rule-breaking attempts are -inf; "min" goals negated).
std::map<KnobConfig, double> search_results(const std::vector<Knob>& knobs, const State& state);

class SearchPolicy : public Policy {
 public:
  // `files`: the editable files that declare knobs (path -> text), as the task's starter has them.
  // Throws KnobError for a bad knob line, std::invalid_argument when there is no knob at all.
  explicit SearchPolicy(std::map<std::string, std::string> files, SearchOptions options = {});

  std::string name() const override { return "search"; }
  // Reads only request.state (required).
  PolicyReply next(const PolicyRequest& request) override;

  const std::vector<Knob>& knobs() const { return knobs_; }
  // The files with every knob set to `config`.
  std::map<std::string, std::string> render(const KnobConfig& config) const;
  int evaluation_budget(const State& state) const;

 private:
  std::map<std::string, std::string> files_;
  std::vector<Knob> knobs_;
  SearchOptions options_;
};

// The search policy for a run: reads the task's starter files (config.task_dir, task.files in the
// run's state) that are editable and declare knobs. Throws std::invalid_argument naming the task
// when it cannot.
std::unique_ptr<Policy> make_search_policy(const State& state, SearchOptions options = {});

}  // namespace marathon
