#include "eval/shared_results.h"

namespace marathon::eval {

void SharedResults::seed(const State& state) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, stored] : state.eval_cache) {
    std::optional<EvalCacheEntry> entry = read_eval_cache_entry(stored);
    if (entry && entry->status == EvalStatus::kOk) results_.emplace(key, std::move(*entry));
  }
}

std::optional<EvalCacheEntry> SharedResults::claim(const std::string& key) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    auto it = results_.find(key);
    if (it != results_.end()) {
      ++served_;
      return it->second;
    }
    if (!in_flight_.count(key)) {
      in_flight_.insert(key);
      return std::nullopt;
    }
    changed_.wait(lock);
  }
}

void SharedResults::publish(const std::string& key, EvalStatus status, const json& result) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(key);
    if (status == EvalStatus::kOk) {
      EvalCacheEntry e;
      e.status = status;
      e.result = result;
      results_[key] = std::move(e);
    }
  }
  changed_.notify_all();
}

void SharedResults::abandon(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(key);
  }
  changed_.notify_all();
}

int64_t SharedResults::served() const {
  std::lock_guard<std::mutex> lock(mu_);
  return served_;
}

}  // namespace marathon::eval
