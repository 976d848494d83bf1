// The runs a control server serves (the RUN_DIRs it was started with), found by the name they were
// given, their absolute path or their run id, each with one read-only connection to its log for
// the readers (status, pages, subscriptions). The verbs (goal_verb.h, compact_verb.h, stop_verb.h)
// open the log for one call each, as the CLI does.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/event_store.h"

namespace marathon::control {

struct ServedRun {
  std::string name;                    // as given on the command line
  std::filesystem::path dir;           // absolute
  std::string run_id;                  // from the log's meta (empty: none yet)
  std::unique_ptr<EventStore> reader;  // opened on first use

  EventStore& read_store();                              // throws StoreError naming the file
  std::unique_ptr<EventStore> open_for_writing() const;  // throws StoreError
  json describe();                                       // the run/list entry
};

class ServedRuns {
 public:
  // Throws StoreError naming the first RUN_DIR that is not a run directory.
  explicit ServedRuns(const std::vector<std::string>& dirs);

  // The run `key` names (name, path or run id); with an empty key, the only run served. Throws
  // rpc::RpcError (kRunNotFound, listing the runs) when none matches.
  ServedRun& find(const std::string& key);
  std::vector<ServedRun>& all() { return runs_; }

 private:
  std::vector<ServedRun> runs_;
};

}  // namespace marathon::control
