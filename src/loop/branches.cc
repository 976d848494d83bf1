#include "loop/branches.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "context/prompt_texts.h"
#include "core/events.h"
#include "core/fold.h"
#include "eval/shared_results.h"
#include "loop/interrupt.h"
#include "loop/progress.h"
#include "loop/run_tools.h"

namespace marathon {

namespace fs = std::filesystem;

fs::path branch_dir(const fs::path& run_dir, int branch) {
  if (branch == 0) return run_dir;
  return run_dir / "branches" / std::to_string(branch);
}

int branch_count(const State& state) {
  int k = state.config.value("branches", 1);
  return k < 1 ? 1 : std::min(k, kMaxBranches);
}

BudgetUsed run_budget_used(const BudgetUsed& own, const std::vector<BudgetUsed>& others) {
  BudgetUsed u = own;
  for (const BudgetUsed& o : others) {
    u.tool_calls += o.tool_calls;
    u.model_calls += o.model_calls;
    u.prompt_tokens += o.prompt_tokens;
    u.completion_tokens += o.completion_tokens;
    u.cache_read_tokens += o.cache_read_tokens;
    u.cache_write_tokens += o.cache_write_tokens;
    u.cost_usd += o.cost_usd;
    u.gpu_s += o.gpu_s;
    u.wall_s = std::max(u.wall_s, o.wall_s);
  }
  return u;
}

int best_branch(const std::vector<State>& states) {
  int best = -1;
  for (size_t i = 0; i < states.size(); ++i) {
    const State& s = states[i];
    if (!s.best_score) continue;
    if (best < 0) {
      best = int(i);
      continue;
    }
    double b = *states[size_t(best)].best_score;
    if (improves(s.goal.direction, *s.best_score, b)) best = int(i);
  }
  return best;
}

namespace {

// A finding or dead end a branch noted itself (not a copy of another branch's): the notes the
// other branches get.
bool is_own_shared_note(const Event& e) {
  if (!is<events::LedgerNoted>(e)) return false;
  const auto p = payload_of<events::LedgerNoted>(e);
  return !p.from_branch && (p.kind == LedgerKind::kFinding || p.kind == LedgerKind::kDeadEnd);
}

// What the branches share while they run: each branch's budget use, the copies of notes into the
// other branches' logs (through handles of the coordinator's own), and the progress lines.
class Coordinator {
 public:
  Coordinator(const std::vector<Branch>& branches, const std::vector<State>& states, bool quiet)
      : quiet_(quiet), mirror_mu_(branches.size()) {
    for (size_t i = 0; i < branches.size(); ++i) {
      mirrors_.push_back(
          EventStore::open((branches[i].dir / "events.db").string(), EventStore::Mode::kOpen));
      used_.push_back(states[i].used);
    }
    if (int b = best_branch(states); b >= 0) run_best_ = states[size_t(b)].best_score;
  }

  // The run's best (branch `from`'s best candidate) made known to branch `to`: its blobs copied
  // into `to`'s store, then candidate.imported and a finding that says how to fork from it. A
  // branch that already knows the candidate (it evaluated it, or got it before) is left alone.
  void share_best(int from, const State& s, int64_t at_seq, int to, const State* to_state) {
    const std::string& cand = s.best_candidate;
    auto files = s.candidates.find(cand);
    if (files == s.candidates.end() || !s.best_score) return;
    if (to_state && to_state->candidates.count(cand)) return;
    std::scoped_lock lock(mirror_mu_[size_t(from)], mirror_mu_[size_t(to)]);
    for (const auto& [path, sha] : files->second) {
      if (mirrors_[size_t(to)]->has_blob(sha)) continue;
      std::optional<std::string> bytes = mirrors_[size_t(from)]->get_blob(sha);
      if (!bytes) {
        throw StoreError(fmt::format("branch {}: blob {} of candidate {} ({}) is missing", from,
                                     sha, cand, path));
      }
      mirrors_[size_t(to)]->put_blob(*bytes);
    }
    events::CandidateImported imported;
    imported.candidate = cand;
    imported.files = files->second;
    imported.from_branch = from;
    imported.score = s.best_score;
    events::LedgerNoted note;
    note.kind = LedgerKind::kFinding;
    const std::string short_hash = cand.substr(0, 12);
    note.text = context::branch_best_note(from, s.goal.metric, *s.best_score, short_hash);
    note.from_branch = from;
    note.from_seq = at_seq;
    mirrors_[size_t(to)]->append_batch({make_event(imported), make_event(note)});
  }

  // A note of one branch copied into another branch's log, unless it already is (a resume after
  // a crash between the note and its copies finishes the copying).
  void copy_note(int from, const Event& note, int to, const std::set<int64_t>& already) {
    if (already.count(note.seq)) return;
    std::lock_guard<std::mutex> lock(mirror_mu_[size_t(to)]);
    const auto p = payload_of<events::LedgerNoted>(note);
    events::LedgerNoted copy;
    copy.kind = p.kind;
    copy.text = context::branch_copied_note(from, p.text);
    copy.from_branch = from;
    copy.from_seq = note.seq;
    mirrors_[size_t(to)]->append(make_event(copy));
  }

  void on_event(int i, const Event& e, const State& s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      used_[size_t(i)] = s.used;
    }
    if (!quiet_) {
      std::string line = progress_line(e, s);
      if (!line.empty()) {
        std::lock_guard<std::mutex> lock(print_mu_);
        std::printf("[branch %d] %s\n", i, line.c_str());
        std::fflush(stdout);
      }
    }
    // The best moves at an evaluation, or (confirmation on) at the re-measurement that confirms it.
    std::string evaluated;
    if (is<events::EvalFinished>(e)) evaluated = payload_of<events::EvalFinished>(e).candidate;
    if (is<events::EvalRemeasured>(e)) evaluated = payload_of<events::EvalRemeasured>(e).candidate;
    if (!evaluated.empty() && s.best_score && s.best_candidate == evaluated && new_run_best(s)) {
      for (size_t j = 0; j < mirrors_.size(); ++j) {
        if (int(j) == i) continue;
        try {
          share_best(i, s, e.seq, int(j), nullptr);
        } catch (const std::exception& ex) {
          spdlog::warn("branch {}: could not share its best with branch {}: {}", i, j, ex.what());
        }
      }
    }
    if (is_own_shared_note(e)) {
      for (size_t j = 0; j < mirrors_.size(); ++j) {
        if (int(j) == i) continue;
        try {
          copy_note(i, e, int(j), {});
        } catch (const std::exception& ex) {
          spdlog::warn("branch {}: could not copy a note into branch {}: {}", i, j, ex.what());
        }
      }
    }
  }

  // Whether a branch's best beats the run's best so far (which it then becomes).
  bool new_run_best(const State& s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (run_best_ && !improves(s.goal.direction, *s.best_score, run_best_)) return false;
    run_best_ = s.best_score;
    return true;
  }

  BudgetUsed run_used(int i, const BudgetUsed& own) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<BudgetUsed> others;
    for (size_t j = 0; j < used_.size(); ++j) {
      if (int(j) != i) others.push_back(used_[j]);
    }
    return run_budget_used(own, others);
  }

 private:
  bool quiet_;
  std::vector<std::unique_ptr<EventStore>> mirrors_;
  std::deque<std::mutex> mirror_mu_;
  std::mutex mu_;
  std::vector<BudgetUsed> used_;
  std::optional<double> run_best_;  // guarded by mu_
  std::mutex print_mu_;
};

class BranchSink : public ProgressSink {
 public:
  BranchSink(Coordinator* c, int i) : c_(c), i_(i) {}
  void on_event(const Event& e, const State& s) override { c_->on_event(i_, e, s); }

 private:
  Coordinator* c_;
  int i_;
};

}  // namespace

BranchesReport drive_branches(const std::vector<Branch>& branches, const BranchesOptions& o) {
  BranchesReport out;
  size_t k = branches.size();
  std::vector<std::vector<Event>> logs(k);
  std::vector<State> states(k);
  for (size_t i = 0; i < k; ++i) {
    logs[i] = branches[i].store->read();
    states[i] = fold(logs[i]);
  }
  eval::SharedResults shared;
  for (const State& s : states) shared.seed(s);
  Coordinator coord(branches, states, o.quiet);

  // Notes not yet copied everywhere (a crash between a note and its copies) are copied now.
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < k; ++j) {
      if (i == j) continue;
      std::set<int64_t> copied;
      for (const Event& e : logs[j]) {
        if (!is<events::LedgerNoted>(e)) continue;
        const auto p = payload_of<events::LedgerNoted>(e);
        if (p.from_branch == int64_t(i)) copied.insert(p.from_seq.value_or(0));
      }
      for (const Event& e : logs[i]) {
        if (is_own_shared_note(e)) coord.copy_note(int(i), e, int(j), copied);
      }
    }
  }
  logs.clear();
  // The run's best reaches every branch that does not know it yet (a crash cut its sharing short).
  if (int b = best_branch(states); b >= 0) {
    for (size_t j = 0; j < k; ++j) {
      if (int(j) != b) coord.share_best(b, states[size_t(b)], 0, int(j), &states[j]);
    }
  }

  install_interrupt_handler();
  out.reports.resize(k);
  out.states.resize(k);
  std::vector<std::unique_ptr<BranchSink>> sinks;
  for (size_t i = 0; i < k; ++i) sinks.push_back(std::make_unique<BranchSink>(&coord, int(i)));
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < k; ++i) {
    threads.emplace_back([&, i] {
      try {
        State head;
        for (const Event& e : branches[i].store->read(1, 1)) apply(head, e);
        ToolRegistry tools = make_run_tools(&head);
        RunnerHooks hooks;
        hooks.interrupted = interrupt_requested;
        hooks.progress = sinks[i].get();
        hooks.executor = o.executor;
        hooks.shared_results = &shared;
        hooks.shared_budget = [&coord, i](const BudgetUsed& own) {
          return coord.run_used(int(i), own);
        };
        Runner runner(*branches[i].store, *branches[i].policy, tools, branches[i].dir, hooks);
        out.reports[i] = runner.run();
        out.states[i] = runner.state();
      } catch (const std::exception& e) {
        spdlog::error("branch {}: {}", i, e.what());
        out.reports[i] = RunReport{RunOutcome::kFailed, e.what()};
        try {
          out.states[i] = fold(branches[i].store->read());
        } catch (const std::exception&) {
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.best = best_branch(out.states);
  if (o.executor) out.usage = o.executor->usage();
  out.served_shared = shared.served();
  return out;
}

std::string branches_summary(const BranchesReport& r, const fs::path& run_dir) {
  std::string out;
  for (size_t i = 0; i < r.states.size(); ++i) {
    out += fmt::format("--- branch {} ({})\n", i, branch_dir(run_dir, int(i)).string());
    out += run_summary(r.states[i], r.reports[i], branch_dir(run_dir, int(i)).string());
  }
  if (r.best >= 0) {
    const State& b = r.states[size_t(r.best)];
    out +=
        fmt::format("best over {} branches: {} {:.6g} (branch {}, candidate {})\n", r.states.size(),
                    b.goal.metric, *b.best_score, r.best, b.best_candidate.substr(0, 12));
  } else {
    out += fmt::format("best over {} branches: no correct evaluation yet\n", r.states.size());
  }
  for (const eval::SlotUsage& u : r.usage) {
    out += fmt::format("executor {}: {} evaluation(s), busy {:.1f} s of {:.1f} s ({:.0f}%){}\n",
                       u.name, u.evaluations, u.busy_s, r.wall_s,
                       r.wall_s > 0 ? 100 * u.busy_s / r.wall_s : 0.0,
                       u.quarantined ? ", quarantined" : "");
  }
  out += fmt::format("evaluations served from another branch's result: {}\n", r.served_shared);
  return out;
}

}  // namespace marathon
