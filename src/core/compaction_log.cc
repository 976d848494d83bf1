#include "core/compaction_log.h"

#include <algorithm>
#include <stdexcept>

namespace marathon {

void apply_compaction_response(CompactionLog& c, int64_t seq, const events::ModelResponse& p) {
  if (p.purpose == events::ModelResponse::kPurposeCompaction) {
    c.open_response_seq = seq;
    c.open_response = p;
  }
}

void apply_compaction_event(CompactionLog& c, const Event& e) {
  using namespace events;
  if (is<ModelResponse>(e)) {
    apply_compaction_response(c, e.seq, payload_of<ModelResponse>(e));
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

namespace {
json cuts_json(const std::map<int64_t, int64_t>& cuts) {
  json out = json::array();
  for (const auto& [seq, max_tokens] : cuts) out.push_back({seq, max_tokens});
  return out;
}
}  // namespace

bool operator==(const CompactionLog& a, const CompactionLog& b) { return to_json(a) == to_json(b); }

json to_json(const CompactionLog& c) {
  return json{{"summary", c.summary},
              {"summarized_through", c.summarized_through},
              {"installed_seq", c.installed_seq},
              {"elided_through", c.elided_through},
              {"last_event_seq", c.last_event_seq},
              {"noop_seq", c.noop_seq},
              {"noop_tokens", c.noop_tokens},
              {"pending_request_seq", c.pending_request_seq},
              {"compactions", c.compactions},
              {"cuts", cuts_json(c.cuts)},
              {"open_proposal_seq", c.open_proposal_seq},
              {"open_proposal", c.open_proposal_seq ? json(c.open_proposal) : json()},
              {"open_response_seq", c.open_response_seq},
              {"open_response", c.open_response_seq ? json(c.open_response) : json()}};
}

CompactionLog compaction_log_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("compaction: not an object");
  CompactionLog c;
  c.summary = j.at("summary").get<std::string>();
  c.summarized_through = j.at("summarized_through").get<int64_t>();
  c.installed_seq = j.at("installed_seq").get<int64_t>();
  c.elided_through = j.at("elided_through").get<int64_t>();
  c.last_event_seq = j.at("last_event_seq").get<int64_t>();
  c.noop_seq = j.at("noop_seq").get<int64_t>();
  c.noop_tokens = j.at("noop_tokens").get<int64_t>();
  c.pending_request_seq = j.at("pending_request_seq").get<int64_t>();
  c.compactions = j.at("compactions").get<int64_t>();
  for (const json& cut : j.at("cuts"))
    c.cuts.emplace(cut.at(0).get<int64_t>(), cut.at(1).get<int64_t>());
  c.open_proposal_seq = j.at("open_proposal_seq").get<int64_t>();
  if (c.open_proposal_seq)
    c.open_proposal = j.at("open_proposal").get<events::CompactionProposed>();
  c.open_response_seq = j.at("open_response_seq").get<int64_t>();
  if (c.open_response_seq) c.open_response = j.at("open_response").get<events::ModelResponse>();
  return c;
}

CompactionLog read_compaction_log(const std::vector<Event>& events) {
  CompactionLog c;
  for (const Event& e : events) apply_compaction_event(c, e);
  return c;
}

}  // namespace marathon
