// `note`: the model records a strategy, a finding or a dead end in the run's ledger (ledger.noted).
// The ledger is shown in every prompt and never compacted away, so a dead end noted at step 50 is
// still known at step 1,000.
#pragma once

#include <memory>

#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_note_tool();

}  // namespace marathon
