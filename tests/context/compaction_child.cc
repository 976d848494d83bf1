// context_compaction_child RUN_DIR TOOL_CALLS: a minimal runner over a real log for the kill tests.
// Each step looks at the last conversation event and does the next thing, so a fresh process on a
// killed one's log carries on: model.request -> model.response (one tool call) -> tool.started ->
// tool.finished -> (compaction if planned) -> prompt -> model.request ... until TOOL_CALLS.
// Prints "C" when a compaction starts, "S" inside the summariser call (which takes a few ms), and
// "P <seq> <sha256>" for every prompt it builds (seq: the last event the prompt saw).
#include <chrono>
#include <cstdio>
#include <thread>

#include "context/compaction.h"
#include "core/event_store.h"
#include "core/fold.h"
#include "core/run_dir.h"
#include "policy/policy.h"

using namespace marathon;

namespace {

std::string filler(size_t bytes, int seed) {
  std::string s;
  for (size_t i = 0; s.size() < bytes; ++i) {
    s += static_cast<char>('a' + (i * 7 + seed) % 26);
    s += static_cast<char>('a' + (i * 3) % 26);
    s += (i % 9 == 8) ? '\n' : ' ';
  }
  s.resize(bytes);
  return s;
}

NewEvent ne(const std::string& type, json payload) {
  NewEvent e;
  e.type = type;
  e.payload = std::move(payload);
  return e;
}

class SlowSummariser : public Policy {
 public:
  std::string name() const override { return "slow"; }
  PolicyReply next(const PolicyRequest& r) override {
    std::printf("S\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    PolicyReply reply;
    reply.prompt_tokens = static_cast<int64_t>(r.messages.dump().size() / 3);
    reply.completion_tokens = 150;
    reply.message = json{{"role", "assistant"},
                         {"content", "Summary: read kernel.cc many times; outputs were long. " +
                                         filler(900, static_cast<int>(r.messages.dump().size()))}};
    return reply;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s RUN_DIR TOOL_CALLS\n", argv[0]);
    return 2;
  }
  RunDir dir = existing_run_dir(argv[1]);
  const int64_t target = std::stoll(argv[2]);
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kOpen);
  std::vector<Event> events = store->read();
  State state = fold(events);
  const context::ContextConfig cfg = context::ContextConfig::from_run_config(state.config);
  auto append = [&](const NewEvent& n) {
    Event e = store->append(n);
    apply(state, e);
    events.push_back(e);
    return e;
  };
  context::ContextIO io{append, [&](const std::string& b) { return store->put_blob(b); },
                        [&](const std::string& s) { return store->get_blob(s); }};
  SlowSummariser summariser;

  while (state.used.tool_calls < target) {
    const Event* last = nullptr;
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      const std::string& t = it->type;
      if (t == events::ModelRequest::kType || t == events::ToolStarted::kType ||
          t == events::ToolFinished::kType ||
          (t == events::ModelResponse::kType && !it->payload.contains("purpose"))) {
        last = &*it;
        break;
      }
    }
    const int64_t n = state.used.tool_calls;
    const std::string id = "c" + std::to_string(n);
    const std::string name = (n >= 10 && n < 13) ? "note" : "read_file";
    if (last && last->type == events::ModelRequest::kType) {
      int64_t estimate = last->payload.value("tokens_estimate", int64_t{0});
      json call = {{"id", id}, {"name", name}, {"arguments", R"({"path":"kernel.cc"})"}};
      append(ne(events::ModelResponse::kType,
                {{"message",
                  {{"content", "reading again, step " + std::to_string(n)},
                   {"tool_calls", json::array({call})}}},
                 {"usage", {{"prompt_tokens", estimate * 11 / 10}, {"completion_tokens", 30}}}}));
    } else if (last && last->type == events::ModelResponse::kType) {
      append(ne(events::ToolStarted::kType,
                {{"call_id", id}, {"name", name}, {"arguments", json::object()}}));
    } else if (last && last->type == events::ToolStarted::kType) {
      std::string out =
          name == "note" ? "noted" : filler(1200 + (n * 37) % 1500, static_cast<int>(n));
      std::vector<NewEvent> batch = {
          ne(events::ToolFinished::kType,
             {{"call_id", id}, {"name", name}, {"ok", true}, {"output", out}})};
      if (name == "note") {
        batch.push_back(ne(events::LedgerNoted::kType,
                           {{"kind", "dead_end"}, {"text", "DEAD-END-" + std::to_string(n)}}));
      }
      for (const Event& e : store->append_batch(batch)) {
        apply(state, e);
        events.push_back(e);
      }
    } else {
      context::CompactionPlan plan = context::plan_compaction(state, events, cfg);
      if (plan.needed()) {
        std::printf("C\n");
        std::fflush(stdout);
        context::run_compaction(plan, State(state), std::vector<Event>(events), cfg,
                                summariser_of(summariser, nullptr), io);
      }
      context::Prompt p = context::build_prompt(state, events, cfg);
      std::printf("P %lld %s\n", static_cast<long long>(state.last_seq),
                  sha256_hex(p.messages.dump()).c_str());
      std::fflush(stdout);
      append(ne(events::ModelRequest::kType, {{"turn", 1}, {"tokens_estimate", p.tokens_raw}}));
    }
  }
  std::printf("DONE %lld\n", static_cast<long long>(state.used.tool_calls));
  return 0;
}
