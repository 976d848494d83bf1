// CompactionLog: what the log says about compaction so far, derived from the events (pure). The
// installed summary, how far tool outputs are elided, the last no-op, a manual request not yet
// served, and the pieces of a compaction a crash interrupted (a summariser response not yet
// proposed, a proposal not yet installed), so that resume finishes it without a new model call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/events.h"

namespace marathon {

struct CompactionLog {
  std::string summary;              // installed summary text ("" if none)
  int64_t summarized_through = 0;   // events up to this seq are covered by the summary
  int64_t installed_seq = 0;        // the compaction.installed that installed it
  int64_t elided_through = 0;       // tool outputs at seq <= this are shown as recall pointers
  int64_t last_event_seq = 0;       // last compaction.* event of any kind
  int64_t noop_seq = 0;             // last no-op compaction (0: none since the last real one)
  int64_t noop_tokens = 0;          // the prompt estimate it could not reduce
  int64_t pending_request_seq = 0;  // compaction.requested not yet answered by compaction.installed
  int64_t compactions = 0;          // installed with outcome compacted, plus elisions and cuts
  // compaction.cut: the messages of event seq are shown with every text field (content, a tool
  // call's arguments) over max_tokens cut to a head and a tail (the smallest max_tokens logged).
  std::map<int64_t, int64_t> cuts;

  // A compaction.proposed with no compaction.installed after it (crash between the two).
  int64_t open_proposal_seq = 0;
  events::CompactionProposed open_proposal;
  // A summariser model.response with no compaction.proposed/installed after it.
  int64_t open_response_seq = 0;
  events::ModelResponse open_response;
};

bool operator==(const CompactionLog& a, const CompactionLog& b);
// Checkpoint form (State::compaction): an object of the fields above.
json to_json(const CompactionLog& c);
// Throws std::invalid_argument (or nlohmann's exceptions) for JSON not of that form.
CompactionLog compaction_log_from_json(const json& j);

// Folds one event into `log` (events in seq order); read_compaction_log is this over the whole log.
void apply_compaction_event(CompactionLog& log, const Event& e);
// apply_compaction_event of the model.response at `seq`, its payload already read.
void apply_compaction_response(CompactionLog& log, int64_t seq, const events::ModelResponse& p);

CompactionLog read_compaction_log(const std::vector<Event>& events);

}  // namespace marathon
