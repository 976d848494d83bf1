// RunViews: the open RunView of each run of a catalog, made on first use and kept (with its log
// open read-only) so that a request folds only what was appended since the last one. Thread-safe:
// the callers of one run take turns; different runs are served in parallel. The first fold of a
// run's whole log (its series) is built on a view of its own and swapped in when done, so the
// callers that need only the state (the Runs page) never wait for it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "serve/run_catalog.h"
#include "serve/run_phase.h"
#include "serve/run_view.h"

namespace marathon::serve {

enum class Need { kState, kSeries };

class RunViews {
 public:
  explicit RunViews(RunCatalog catalog) : catalog_(std::move(catalog)) {}

  // Runs `f` on the run's view, refreshed (and with its series when `need` says so), and its
  // phase, while no other caller uses that view. Returns kBadId / kNotFound without calling `f`.
  // A StoreError (a damaged or vanished log) propagates and drops the view, so the next call
  // opens the log afresh.
  RunLookup with(std::string_view id, Need need, const std::function<void(RunView&, RunPhase)>& f);

  // The rows of every run (run_json.h's run_row), newest activity first; a run whose log cannot
  // be read is a row {id, phase: "unreadable", error}. A run whose view is busy (another request
  // holds it) gets the row made at its last use, its age brought up to now, rather than a wait.
  json rows(int64_t now_us);

  const RunCatalog& catalog() const { return catalog_; }

 private:
  struct Entry {
    std::mutex mu;  // guards `view`
    std::unique_ptr<RunView> view;
    std::mutex build_mu;  // one series build at a time
    std::mutex row_mu;    // guards `row`
    json row;             // the row at the view's last use
  };
  std::shared_ptr<Entry> entry(const std::string& id);

  RunCatalog catalog_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
};

}  // namespace marathon::serve
