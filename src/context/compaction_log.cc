#include "context/compaction_log.h"

#include <algorithm>

namespace marathon::context {

void apply_compaction_event(CompactionLog& c, const Event& e) {
  const json& p = e.payload;
  if (e.type == ev::kModelResponse) {
    if (p.value("purpose", "") == kPurposeCompaction) {
      c.open_response_seq = e.seq;
      c.open_response = p;
    }
    return;
  }
  if (e.type.rfind("compaction.", 0) != 0) return;
  c.last_event_seq = e.seq;
  if (e.type == ev::kCompactionRequested) {
    if (c.pending_request_seq == 0) c.pending_request_seq = e.seq;
  } else if (e.type == ev::kCompactionProposed) {
    c.open_proposal_seq = e.seq;
    c.open_proposal = p;
    c.open_response_seq = 0;
    c.open_response = json();
  } else if (e.type == kCompactionElided) {
    std::string outcome = p.value("outcome", "compacted");
    if (outcome == "compacted") {
      c.elided_through = std::max(c.elided_through, p.value("elided_through", int64_t{0}));
      ++c.compactions;
      c.noop_seq = 0;
    }
  } else if (e.type == kCompactionCut) {
    auto cuts = p.find("cuts");
    if (cuts == p.end() || !cuts->is_array()) return;
    for (const json& cut : *cuts) {
      auto seq = cut.is_object() ? cut.find("seq") : cut.end();
      auto max = cut.is_object() ? cut.find("max_tokens") : cut.end();
      if (!cut.is_object() || seq == cut.end() || max == cut.end() || !seq->is_number_integer() ||
          !max->is_number_integer())
        continue;
      if (seq->get<int64_t>() <= 0 || max->get<int64_t>() <= 0) continue;
      auto [it, added] = c.cuts.emplace(seq->get<int64_t>(), max->get<int64_t>());
      if (!added) it->second = std::min(it->second, max->get<int64_t>());
    }
    ++c.compactions;
    c.noop_seq = 0;
  } else if (e.type == ev::kCompactionInstalled) {
    std::string outcome = p.value("outcome", "compacted");
    if (outcome == "compacted") {
      c.summary = p.value("summary", "");
      c.summarized_through = p.value("summarized_through", int64_t{0});
      c.installed_seq = e.seq;
      c.elided_through = std::max(c.elided_through, p.value("elided_through", int64_t{0}));
      ++c.compactions;
      c.noop_seq = 0;
    } else if (outcome == "noop") {
      c.noop_seq = e.seq;
      c.noop_tokens = p.value("tokens_before", int64_t{0});
    }
    c.pending_request_seq = 0;
    c.open_proposal_seq = 0;
    c.open_proposal = json();
    c.open_response_seq = 0;
    c.open_response = json();
  }
}

CompactionLog read_compaction_log(const std::vector<Event>& events) {
  CompactionLog c;
  for (const Event& e : events) apply_compaction_event(c, e);
  return c;
}

}  // namespace marathon::context
