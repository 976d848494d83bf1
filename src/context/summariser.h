// The summariser compaction calls: one model call on a prompt of its own, no tools. A function,
// so that context/ needs no policy: the loop hands in its policy (policy/policy.h,
// summariser_of), `marathon compact --now` none (the structural summary).
#pragma once

#include <functional>
#include <optional>

#include "core/events.h"

namespace marathon::context {

struct SummaryRequest {
  json messages = json::array();  // system and user messages (canonical form, policy/policy.h)
  // Polled while the call runs: true ends it with an error of kind kInterrupted, and compaction
  // logs nothing for it (the next plan starts it again).
  std::function<bool()> interrupted;
};

// The reply as it is logged: `response` is the model.response (message, usage, cost, provider,
// model, finish_reason, error; compaction sets purpose and scope and keeps only the text), and
// `usage_rejected` the llm.usage_rejected logged before it when the usage is the runtime's
// estimate.
struct SummaryReply {
  events::ModelResponse response;
  std::optional<events::LlmUsageRejected> usage_rejected;
};

using Summariser = std::function<SummaryReply(const SummaryRequest&)>;

}  // namespace marathon::context
