#include "serve/run_views.h"

#include <algorithm>

#include "serve/run_json.h"

namespace marathon::serve {

std::shared_ptr<RunViews::Entry> RunViews::entry(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Entry>& e = entries_[id];
  if (!e) e = std::make_shared<Entry>();
  return e;
}

RunLookup RunViews::with(std::string_view id, Need need,
                         const std::function<void(RunView&, RunPhase)>& f) {
  std::filesystem::path dir;
  RunLookup found = catalog_.find(id, &dir);
  if (found != RunLookup::kFound) return found;
  std::shared_ptr<Entry> e = entry(std::string(id));
  auto has_series = [&] {
    std::lock_guard<std::mutex> lock(e->mu);
    return e->view && e->view->has_series();
  };
  if (need == Need::kSeries && !has_series()) {
    std::lock_guard<std::mutex> build(e->build_mu);
    if (!has_series()) {
      auto fresh = std::make_unique<RunView>(dir, RunView::Fold::kSeries);
      std::lock_guard<std::mutex> lock(e->mu);
      e->view = std::move(fresh);
    }
  }
  std::lock_guard<std::mutex> lock(e->mu);
  try {
    if (!e->view) e->view = std::make_unique<RunView>(dir);
    e->view->refresh();
    if (need == Need::kSeries) e->view->ensure_series();  // a no-op unless the view was dropped
  } catch (...) {
    e->view.reset();
    throw;
  }
  RunPhase phase = phase_of(e->view->state(), runner_holds_lock(dir));
  json row = run_row(std::string(id), *e->view, phase, 0);
  {
    std::lock_guard<std::mutex> r(e->row_mu);
    e->row = std::move(row);
  }
  f(*e->view, phase);
  return RunLookup::kFound;
}

json RunViews::rows(int64_t now_us) {
  std::vector<json> rows;
  for (const std::string& id : catalog_.list()) {
    std::shared_ptr<Entry> e = entry(id);
    if (std::unique_lock<std::mutex> free(e->mu, std::try_to_lock); !free.owns_lock()) {
      std::lock_guard<std::mutex> r(e->row_mu);
      if (!e->row.is_null()) {  // busy: its last row, aged to now
        json row = e->row;
        int64_t at = row["last_event"].value("at_us", int64_t{0});
        if (at > 0) row["last_event"]["age_s"] = std::max<double>(0, double(now_us - at) / 1e6);
        rows.push_back(std::move(row));
        continue;
      }
    }
    try {
      with(id, Need::kState,
           [&](RunView& v, RunPhase phase) { rows.push_back(run_row(id, v, phase, now_us)); });
    } catch (const std::exception& e) {
      rows.push_back({{"id", id}, {"phase", "unreadable"}, {"error", e.what()}});
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    auto at = [](const json& r) -> int64_t {
      return r.contains("last_event") ? r["last_event"].value("at_us", int64_t{0}) : 0;
    };
    return at(a) > at(b);
  });
  return json(rows);
}

}  // namespace marathon::serve
