// SIGKILL during compaction, then resume: the log holds the whole installed summary or none, a
// compaction cut short is finished from the log without asking the model again, the run goes on,
// and every prompt is byte-identical to the one built from the same log prefix (across resumes).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "../loop/loop_test_support.h"
#include "context/compaction.h"
#include "context/prompt_builder.h"
#include "core/event_store.h"
#include "core/fold.h"
#include "core/run_dir.h"

namespace marathon::context {
namespace {

using marathon::testing::Child;
using marathon::testing::TempDir;
namespace fs = std::filesystem;

constexpr int64_t kToolCalls = 150;
constexpr int kKills = 30;

NewEvent ne(const std::string& type, json payload) {
  NewEvent e;
  e.type = type;
  e.payload = std::move(payload);
  return e;
}

fs::path make_run(const TempDir& tmp) {
  RunDir dir = create_run_dir(tmp / "run");
  auto store = EventStore::open(dir.events_db().string(), EventStore::Mode::kCreate);
  store->append(
      ne(events::RunCreated::kType, {{"run_id", "run-kill"},
                                     {"task", {{"name", "t"}, {"description", "read things"}}},
                                     {"goal", {{"objective", "keep reading"}, {"metric", "value"}}},
                                     {"budget", {{"max_tool_calls", kToolCalls}}},
                                     {"config", {{"policy", "llm"}, {"context_window", 6000}}}}));
  return dir.root;
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

size_t count_prefix(const std::vector<std::string>& lines, const std::string& prefix) {
  size_t n = 0;
  for (const std::string& l : lines) n += l.rfind(prefix, 0) == 0;
  return n;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The invariants a kill must never break.
void check_log(const fs::path& run, int kill) {
  auto store = EventStore::open((run / kEventsDbName).string(), EventStore::Mode::kReadOnly);
  std::vector<Event> events = store->read();
  State s = fold(events);  // throws on a malformed payload
  std::string proposed_sha;
  bool response_open = false;
  for (const Event& e : events) {
    if (e.type == events::ModelResponse::kType && e.payload.contains("purpose")) {
      ASSERT_FALSE(response_open) << "kill " << kill << ": summariser asked twice, seq " << e.seq;
      response_open = true;
    } else if (e.type == events::CompactionProposed::kType) {
      proposed_sha = e.payload.value("summary_sha", "");
      response_open = false;
    } else if (e.type == events::CompactionInstalled::kType) {
      response_open = false;
      ASSERT_TRUE(e.payload.at("summary").is_string());
      for (const char* k : {"trigger", "outcome", "summarized_through", "tokens_before",
                            "tokens_after", "source"}) {
        ASSERT_TRUE(e.payload.contains(k)) << k;
      }
      if (e.payload["source"] == "model") {
        std::optional<std::string> blob = store->get_blob(proposed_sha);
        ASSERT_TRUE(blob.has_value());
        EXPECT_EQ(e.payload["summary"].get<std::string>(), trim(*blob))
            << "kill " << kill << ": installed summary differs from the proposal";
      }
    }
  }
  if (s.compaction.installed_seq != 0) {
    EXPECT_FALSE(s.compaction.summary.empty());
  }
  ContextConfig cfg = ContextConfig::from_run_config(s.config);
  EXPECT_LE(build_prompt(s, events, cfg).tokens_estimate, cfg.hard_tokens());
}

TEST(KillDuringCompaction, LogHoldsTheWholeSummaryOrNoneAndTheRunGoesOn) {
  TempDir tmp("ctx-kill");
  fs::path run = make_run(tmp);
  fs::path out = tmp / "child.out";
  std::mt19937 rng(12345);
  int kills = 0, kills_in_compaction = 0;
  for (int attempt = 0; attempt < 200 && kills < kKills; ++attempt) {
    size_t c_before = count_prefix(lines_of(out), "C");
    Child child({CONTEXT_CHILD, run.string(), std::to_string(kToolCalls)}, {}, out);
    bool target_compaction = attempt % 3 != 2;
    std::optional<int> rc;
    if (target_compaction) {
      // Wait for a compaction to start, then kill a few ms into it (the summariser takes 3 ms).
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!(rc = child.wait_for(0.001)) && std::chrono::steady_clock::now() < deadline) {
        if (count_prefix(lines_of(out), "C") > c_before) break;
      }
      if (!rc) {
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 6000));
        rc = child.wait_for(0);
      }
    } else {
      rc = child.wait_for(0.005 + (rng() % 100) / 1000.0);
    }
    if (rc) {
      ASSERT_EQ(*rc, 0) << "the child failed; see " << out;
      break;  // it finished before we could kill it
    }
    child.kill_group();
    ++kills;
    if (target_compaction) ++kills_in_compaction;
    check_log(run, kills);
    if (HasFatalFailure()) return;
  }
  // The run goes on to the end.
  {
    Child child({CONTEXT_CHILD, run.string(), std::to_string(kToolCalls)}, {}, out);
    std::optional<int> rc = child.wait_for(300);
    ASSERT_TRUE(rc.has_value());
    ASSERT_EQ(*rc, 0);
  }
  check_log(run, kills + 1);
  auto store = EventStore::open((run / kEventsDbName).string(), EventStore::Mode::kReadOnly);
  std::vector<Event> events = store->read();
  State s = fold(events);
  EXPECT_EQ(s.used.tool_calls, kToolCalls);
  EXPECT_TRUE((s.compaction.installed_seq != 0));
  EXPECT_GE(kills, 10);

  // Every prompt any process built equals the prompt built here from the same log prefix.
  ContextConfig cfg = ContextConfig::from_run_config(s.config);
  std::map<int64_t, std::string> seen;
  size_t checked = 0, repeated = 0;
  for (const std::string& l : lines_of(out)) {
    if (l.rfind("P ", 0) != 0) continue;
    std::istringstream in(l.substr(2));
    int64_t seq;
    std::string sha;
    in >> seq >> sha;
    auto [it, fresh] = seen.emplace(seq, sha);
    if (!fresh) {
      ++repeated;
      EXPECT_EQ(it->second, sha) << "two processes built different prompts at seq " << seq;
      continue;
    }
    std::vector<Event> prefix(events.begin(), events.begin() + seq);
    Prompt p = build_prompt(fold(prefix), prefix, cfg);
    EXPECT_EQ(sha256_hex(p.messages.dump()), sha) << "prompt at seq " << seq;
    ++checked;
  }
  EXPECT_GT(checked, 100u);
  std::printf(
      "%d kills (%d aimed at a compaction), %zu prompts checked, %zu rebuilt after a "
      "resume, %lld events\n",
      kills, kills_in_compaction, checked, repeated, static_cast<long long>(events.size()));
}

}  // namespace
}  // namespace marathon::context
