// Results shared by the branches of a run (docs/scale-out.md): an evaluation any branch paid for
// is served to the others from here, and a candidate one branch is evaluating now is waited for,
// not evaluated again. Seeded from every branch's log (State::eval_cache) when the branches start,
// so the sharing survives a resume. Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "core/state.h"

namespace marathon::eval {

class SharedResults {
 public:
  // The ok results a branch's log holds (its eval_cache entries with status ok).
  void seed(const State& state);

  // The result for `key` (its status is ok) when a branch has one, waiting while another branch
  // is evaluating it; else nullopt, and the caller now holds the key: it must publish() or
  // abandon() it.
  std::optional<EvalCacheEntry> claim(const std::string& key);
  // An evaluation finished: ok results are kept (and served); any other outcome only releases the
  // key (the next branch to ask evaluates it).
  void publish(const std::string& key, EvalStatus status, const json& result);
  void abandon(const std::string& key);

  int64_t served() const;  // claims answered from here

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, EvalCacheEntry> results_;
  std::set<std::string> in_flight_;
  int64_t served_ = 0;
};

}  // namespace marathon::eval
