// Kill -9 at random moments and resume: the scripted tiny run, killed (the whole process group,
// SIGKILL) at >= 20 random points across several runs and resumed each time, ends in the same
// final state as the uninterrupted run; no evaluation is executed twice and no model request is
// repeated, except the one in flight at a kill.
#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "core/fold.h"
#include "loop/replay.h"
#include "loop_test_support.h"
#include "tiny_script.h"

namespace marathon {
namespace {

using testing::Child;
using testing::load_events;
using testing::load_state;
using testing::read_lines;
using testing::read_text;
using testing::run_binary;
using testing::TempDir;

constexpr int kMinKills = 20;

// What a kill left behind that the resume may legitimately do again.
struct InFlightAtKill {
  bool model_request = false;           // a model.request with no response after it
  std::vector<std::string> evaluating;  // solution.txt sha of each evaluate in flight
};

// One line per event: seq, type and the fields that tell calls and evaluations apart.
std::string log_outline(const std::vector<Event>& events) {
  std::string out;
  for (const Event& e : events) {
    out += std::to_string(e.seq) + " " + e.type;
    for (const char* k : {"name", "call_id", "cached", "status", "path", "sha", "reason"}) {
      if (e.payload.contains(k)) out += std::string(" ") + k + "=" + e.payload[k].dump();
    }
    out += "\n";
  }
  return out;
}

// True once run.created is in the log (a kill before that leaves no run to resume).
bool run_started(const fs::path& run) {
  try {
    return fs::exists(run / "events.db") && !load_events(run).empty();
  } catch (const std::exception&) {
    return false;  // killed while the log was being created
  }
}

InFlightAtKill in_flight_at_kill(const fs::path& run) {
  InFlightAtKill r;
  if (!run_started(run)) return r;
  std::vector<Event> events = load_events(run);
  for (const Event& e : events) {
    if (e.type == events::ModelRequest::kType) r.model_request = true;
    if (e.type == events::ModelResponse::kType) r.model_request = false;
  }
  State s = fold(events);
  for (const auto& [id, t] : s.in_flight) {
    if (t.name == "evaluate") r.evaluating.push_back(s.workspace["solution.txt"]);
  }
  return r;
}

TEST(KillAndResume, RandomSigkillsThenResumeEndInTheUninterruptedFinalState) {
  TempDir dir("kill");
  ScriptedLlmServer server = tiny_server();

  // The reference: one uninterrupted run, timed to place the kills.
  fs::path ref = dir / "ref";
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(run_binary(tiny_run_args(ref, server.base_url()),
                       testing::eval_marker_env(dir / "marks" / "ref.marker"), dir / "ref.log"),
            0)
      << read_text(dir / "ref.log");
  double ref_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t ref_requests = server.request_count();
  json want = comparable_state(load_state(ref));
  ASSERT_TRUE(load_state(ref).done);

  std::mt19937 rng(20261202);
  std::uniform_real_distribution<double> delay(0.0, 0.5 * ref_s);
  int kills = 0, runs = 0, kills_in_request = 0, kills_in_eval = 0;
  while (kills < kMinKills) {
    ++runs;
    fs::path run = dir / ("run" + std::to_string(runs));
    fs::path marker = dir / "marks" / ("marker" + std::to_string(runs));
    fs::path log = dir / ("run" + std::to_string(runs) + ".log");
    std::map<std::string, std::string> env = testing::eval_marker_env(marker);
    size_t requests_before = server.request_count();
    int allowed_repeats = 0;
    std::map<std::string, int> allowed_evals;  // solution sha -> extra executions allowed
    bool done = false;
    for (int attempt = 0; !done; ++attempt) {
      ASSERT_LT(attempt, 200) << "the run makes no progress between kills";
      std::vector<std::string> argv{MARATHON_BINARY};
      if (!run_started(run)) {
        fs::remove_all(run);
        for (const std::string& a : tiny_run_args(run, server.base_url())) argv.push_back(a);
      } else {
        argv.insert(argv.end(), {"resume", run.string(), "--quiet"});
      }
      Child child(argv, env, log);
      // After the quota of kills, let every run finish.
      double d = kills < kMinKills ? delay(rng) : 1e9;
      std::optional<int> rc = child.wait_for(std::min(d, 120.0));
      if (rc) {
        ASSERT_EQ(*rc, 0) << read_text(log);
        done = load_state(run).done;
        ASSERT_TRUE(done) << "exited 0 without finishing:\n" << read_text(log);
        continue;
      }
      child.kill_group();
      ++kills;
      InFlightAtKill f = in_flight_at_kill(run);
      allowed_repeats += f.model_request;
      kills_in_request += f.model_request;
      kills_in_eval += !f.evaluating.empty();
      for (const std::string& sha : f.evaluating) ++allowed_evals[sha];
    }

    State s = load_state(run);
    EXPECT_EQ(comparable_state(s), want) << "run " << runs << " diverged; log:\n" << read_text(log);
    EXPECT_TRUE(s.in_flight.empty());

    // Evaluator executions: each candidate content once, plus once per kill that hit it running.
    std::map<std::string, int> executed;
    for (const std::string& sha : read_lines(marker)) ++executed[sha];
    for (const auto& [sha, n] : executed) {
      EXPECT_LE(n, 1 + allowed_evals[sha])
          << "candidate " << sha << " evaluated " << n << " times; the log:\n"
          << log_outline(load_events(run));
    }
    EXPECT_EQ(s.evaluations_executed, 3);

    // Model requests: the uninterrupted count plus the ones in flight at a kill.
    size_t requests = server.request_count() - requests_before;
    EXPECT_GE(requests, ref_requests);
    EXPECT_LE(requests, ref_requests + allowed_repeats);
  }
  std::cout << "kill-and-resume: survived " << kills << " SIGKILLs over " << runs
            << " runs (uninterrupted run " << ref_s << " s); " << kills_in_request
            << " hit a model request in flight, " << kills_in_eval << " an evaluation\n";
}

}  // namespace
}  // namespace marathon
