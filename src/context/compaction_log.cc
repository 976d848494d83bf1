#include "context/compaction_log.h"

#include <algorithm>

namespace marathon::context {

void apply_compaction_event(CompactionLog& c, const Event& e) {
  using namespace events;
  if (is<ModelResponse>(e)) {
    auto p = payload_of<ModelResponse>(e);
    if (p.purpose == ModelResponse::kPurposeCompaction) {
      c.open_response_seq = e.seq;
      c.open_response = std::move(p);
    }
    return;
  }
  if (!is_compaction_type(e.type)) return;
  c.last_event_seq = e.seq;
  if (is<CompactionRequested>(e)) {
    if (c.pending_request_seq == 0) c.pending_request_seq = e.seq;
  } else if (is<CompactionProposed>(e)) {
    c.open_proposal_seq = e.seq;
    c.open_proposal = payload_of<CompactionProposed>(e);
    c.open_response_seq = 0;
    c.open_response = ModelResponse{};
  } else if (is<CompactionElided>(e)) {
    auto p = payload_of<CompactionElided>(e);
    if (p.outcome == CompactionOutcome::kCompacted) {
      c.elided_through = std::max(c.elided_through, p.scope.elided_through);
      ++c.compactions;
      c.noop_seq = 0;
    }
  } else if (is<CompactionCut>(e)) {
    const CompactionCut p = payload_of<CompactionCut>(e);
    for (const CompactionCut::Cut& cut : p.cuts) {
      auto [it, added] = c.cuts.emplace(cut.seq, cut.max_tokens);
      if (!added) it->second = std::min(it->second, cut.max_tokens);
    }
    ++c.compactions;
    c.noop_seq = 0;
  } else if (is<CompactionInstalled>(e)) {
    auto p = payload_of<CompactionInstalled>(e);
    if (p.outcome == CompactionOutcome::kCompacted) {
      c.summary = p.summary;
      c.summarized_through = p.scope.summarized_through;
      c.installed_seq = e.seq;
      c.elided_through = std::max(c.elided_through, p.scope.elided_through);
      ++c.compactions;
      c.noop_seq = 0;
    } else if (p.outcome == CompactionOutcome::kNoop) {
      c.noop_seq = e.seq;
      c.noop_tokens = p.scope.tokens_before;
    }
    c.pending_request_seq = 0;
    c.open_proposal_seq = 0;
    c.open_proposal = CompactionProposed{};
    c.open_response_seq = 0;
    c.open_response = ModelResponse{};
  }
}

CompactionLog read_compaction_log(const std::vector<Event>& events) {
  CompactionLog c;
  for (const Event& e : events) apply_compaction_event(c, e);
  return c;
}

}  // namespace marathon::context
