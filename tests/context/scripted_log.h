// ScriptedLog: a long, varied log for the tests that compare prompt assembly paths. Each turn is
// drawn from a seeded generator: one to three tool calls, outputs from a few bytes to far over the
// per-output cap, text-only replies followed by goal turns, turns the provider paused (text or
// thinking alone, continued by the next turn), failed model calls, budget notes
// between the calls of one turn, interrupted and missing results, duplicate results and results
// for unknown calls, notes, evaluations, and now and then a manual compaction request. Compaction
// itself is left to the caller (the thing under test), with the summariser below.
#pragma once

#include <fmt/format.h>

#include <map>
#include <random>
#include <string>

#include "context/compaction.h"
#include "context/token_estimate.h"
#include "log_builder.h"
#include "policy/policy.h"

namespace marathon::context::testing {

// A summariser that answers, fails, answers too long or empty, in a fixed rotation.
class RotatingSummariser : public Policy {
 public:
  int calls = 0;
  std::string name() const override { return "scripted"; }
  PolicyReply next(const PolicyRequest& r) override {
    ++calls;
    PolicyReply reply;
    reply.prompt_tokens = estimate_request_tokens(r.messages, r.tools);
    reply.completion_tokens = 120;
    reply.provider = "openai";
    reply.model = "scripted";
    std::string text;
    switch (calls % 5) {
      case 1:
        reply.error = json{{"kind", "transport"}, {"message", "HTTP 503"}};
        return reply;
      case 2:
        text = "";  // empty: the structural summary steps in
        break;
      case 3:
        text = "Summary " + std::to_string(calls) + ": " + filler(60000);  // over max_summary
        break;
      default:
        text = "Summary " + std::to_string(calls) + ": tiled 64x64, unrolled by 4; " + filler(900);
    }
    reply.message = json{{"role", "assistant"}, {"content", text}};
    return reply;
  }
};

class ScriptedLog {
 public:
  LogBuilder b;
  ContextConfig config;
  json tools = json::array();
  RotatingSummariser summariser;
  std::map<std::string, std::string> blobs;

  explicit ScriptedLog(int64_t window, unsigned seed = 7) : rng_(seed) {
    b.created(window, 100000);
    config = ContextConfig::from_run_config(b.state.config);
    for (const char* n : {"read_file", "write_file", "run", "evaluate", "note", "recall"}) {
      tools.push_back({{"type", "function"},
                       {"function",
                        {{"name", n},
                         {"description", std::string("Tool ") + n + ": " + filler(200)},
                         {"parameters", {{"type", "object"}}}}}});
    }
  }

  ContextIO io() {
    return {[this](const NewEvent& e) { return b.append(e); },
            [this](const std::string& bytes) {
              std::string sha = fmt::format("blob{}", blobs.size());
              blobs[sha] = bytes;
              return sha;
            },
            [this](const std::string& sha) -> std::optional<std::string> {
              auto it = blobs.find(sha);
              if (it == blobs.end()) return std::nullopt;
              return it->second;
            }};
  }

  // Appends one turn: model.request (with the raw estimate of the prompt just built), the reply,
  // and what follows from it.
  void turn(int64_t tokens_raw) {
    const int step = step_++;
    b.add(events::ModelRequest::kType, {{"turn", step}, {"tokens_estimate", tokens_raw}});
    const int64_t reported = tokens_raw * (100 + pick(30)) / 100;
    json usage = {{"prompt_tokens", reported}, {"completion_tokens", 50}};
    const int kind = pick(100);
    if (kind < 4) {  // a failed model call
      b.add(events::ModelResponse::kType,
            {{"message", {{"content", ""}}},
             {"usage", {{"prompt_tokens", 0}, {"completion_tokens", 0}}},
             {"error", {{"kind", "transport"}, {"message", "HTTP 502"}}}});
      return;
    }
    if (kind < 6) {  // the provider paused the turn: the next prompt ends with it, as it is
      json message = {{"content", step % 2 ? fmt::format("Step {}: still working", step) : ""}};
      if (step % 2 == 0) {  // thinking alone: it goes back all the same
        message["thinking_blocks"] =
            json::array({{{"type", "thinking"}, {"thinking", filler(200)}, {"signature", "sig"}}});
      }
      b.add(events::ModelResponse::kType,
            {{"message", message},
             {"usage", usage},
             {"finish_reason", events::ModelResponse::kFinishPauseTurn}});
      return;
    }
    if (kind < 9) {  // the policy stops: a goal turn follows
      b.add(events::ModelResponse::kType,
            {{"message", {{"content", fmt::format("Step {}: thinking it over.", step)}}},
             {"usage", usage}});
      b.add("user.message",
            {{"reason", "goal_turn"}, {"content", fmt::format("Keep going ({}).", step)}});
      return;
    }
    const int n_calls = kind < 75 ? 1 : kind < 92 ? 2 : 3;
    json calls = json::array();
    std::vector<std::pair<std::string, std::string>> ids;
    for (int i = 0; i < n_calls; ++i) {
      static const char* kNames[] = {"read_file", "write_file", "run", "evaluate", "note"};
      std::string name = kNames[pick(5)];
      std::string id = fmt::format("call_{}_{}", step, i);
      json args = name == "write_file"
                      ? json{{"path", "k.cc"}, {"content", filler(300 + pick(900))}}
                      : json{{"path", "k.cc"}};
      calls.push_back({{"id", id}, {"name", name}, {"arguments", args.dump()}});
      ids.emplace_back(id, name);
    }
    b.add(
        events::ModelResponse::kType,
        {{"message",
          {{"content", fmt::format("Step {}: variant {}", step, pick(17))}, {"tool_calls", calls}}},
         {"usage", usage}});
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto& [id, name] = ids[i];
      if (i > 0 && pick(100) < 8) {  // a budget note lands between two calls of one turn
        b.add("user.message", {{"reason", "budget"}, {"content", "Budget note: wrap up soon."}});
      }
      b.add(events::ToolStarted::kType,
            {{"call_id", id}, {"name", name}, {"arguments", json::object()}});
      const int r = pick(100);
      if (r < 3 && i + 1 == ids.size()) continue;  // no result recorded: a placeholder is shown
      json fin = {{"call_id", id}, {"name", name}, {"ok", true}, {"output", output(name, step)}};
      if (r >= 3 && r < 5) {
        fin["output"] = "";
        fin["interrupted"] = true;
      }
      if (r == 5) fin["output_sha"] = "blob-of-the-full-output";
      b.add(events::ToolFinished::kType, fin);
      if (r == 6) b.add(events::ToolFinished::kType, fin);  // a second result for the same call
      if (r == 7) {
        b.add(events::ToolFinished::kType,
              {{"call_id", "nobody"}, {"name", "run"}, {"ok", true}, {"output", "stray"}});
      }
      if (name == "note") {
        b.add(events::LedgerNoted::kType,
              {{"kind", pick(4) == 0 ? "dead_end" : "finding"},
               {"text", fmt::format("note {} of step {}", pick(40), step)}});
      } else if (name == "evaluate") {
        b.add(events::EvalFinished::kType,
              {{"candidate", fmt::format("cand{}", step)},
               {"status", "ok"},
               {"result", {{"correct", pick(5) != 0}, {"score", 1.0 + pick(300) / 100.0}}},
               {"strategy", fmt::format("variant {}", step % 13)}});
      }
    }
    if (pick(200) == 0) b.add(events::CompactionRequested::kType, {{"trigger", "manual"}});
  }

  int pick(int n) { return static_cast<int>(rng_() % static_cast<unsigned>(n)); }

 private:
  std::string output(const std::string& name, int step) {
    const int r = pick(100);
    if (r < 2) return filler(60000 + pick(20000), 'd');  // over the per-output cap
    if (name == "note") return "noted";
    if (name == "write_file") return "wrote k.cc";
    if (name == "evaluate") return fmt::format("correct: yes, score {}\n", step) + filler(400);
    if (r < 30) return filler(100 + pick(100));  // under elide_min_bytes
    return filler(500 + pick(3000), static_cast<char>('a' + step % 9));
  }

  std::mt19937 rng_;
  int step_ = 0;
};

}  // namespace marathon::context::testing
