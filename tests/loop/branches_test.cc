// Parallel branches (`marathon run --branches K`): four scripted branches on the slow test task
// with the local executor's CPU slots standing in for GPUs. A dead end noted by branch 1 reaches
// branch 3's next prompt; the same candidate from branches 0 and 2 is evaluated once; the run's
// best is the best over branches; and the slots' busy fraction is printed (bench/results, not
// asserted: never a timing as a test).
#include "loop/branches.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <regex>

#include "loop_test_support.h"
#include "scripted_llm_server.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::events_of_type;
using ::testing::HasSubstr;
using testing::load_events;
using testing::read_lines;
using testing::run_binary;
using testing::ScriptedLlmServer;
using testing::ScriptedResponse;
using testing::TempDir;

TEST(Branches, RunBudgetAddsTheOthersUseAndTakesTheLongestWall) {
  BudgetUsed own{10, 5, 100, 50, 60, 4, 1.5, 30, 2};
  BudgetUsed a{1, 1, 10, 5, 8, 0, 0.5, 40, 1};
  BudgetUsed b{2, 2, 20, 10, 0, 2, 1.0, 20, 0};
  BudgetUsed u = run_budget_used(own, {a, b});
  EXPECT_EQ(u.tool_calls, 13);
  EXPECT_EQ(u.model_calls, 8);
  EXPECT_EQ(u.prompt_tokens, 130);
  EXPECT_EQ(u.completion_tokens, 65);
  EXPECT_EQ(u.cache_read_tokens, 68);
  EXPECT_EQ(u.cache_write_tokens, 6);
  EXPECT_DOUBLE_EQ(u.cost_usd, 3.0);
  EXPECT_DOUBLE_EQ(u.wall_s, 40);
  EXPECT_DOUBLE_EQ(u.gpu_s, 3);
}

TEST(Branches, BestIsTheBestOverBranchesInTheGoalsDirection) {
  std::vector<State> s(3);
  for (State& x : s) x.goal.direction = Direction::kMax;
  EXPECT_EQ(best_branch(s), -1);
  s[0].best_score = 3;
  s[2].best_score = 5;
  EXPECT_EQ(best_branch(s), 2);
  for (State& x : s) x.goal.direction = Direction::kMin;
  EXPECT_EQ(best_branch(s), 0);
}

json tc(const std::string& name, json args) {
  return {{"name", name}, {"arguments", std::move(args)}};
}

constexpr int kBranches = 4;
constexpr double kThinkS = 0.3;  // the scripted model's fixed delay per call
const std::string kDeadEnd = "DEAD-END-FROM-1: value 0 gains nothing";

// The task the branches work on: the slow test task (a 2 s evaluation, its score the candidate's
// value), or with MARATHON_SCALEOUT_TASK=cpu-matmul the CPU task of tasks/ (the bench of
// bench/results/scaleout-*.md: its evaluator compiles and times each kernel).
struct BranchTask {
  fs::path dir;
  std::string file;  // the editable file the script writes
  bool slow = true;
};

BranchTask branch_task() {
  const char* t = std::getenv("MARATHON_SCALEOUT_TASK");
  if (t && std::string(t) == "cpu-matmul") {
    return {testing::source_dir() / "tasks/cpu-matmul", "kernel.cc", false};
  }
  return {testing::source_dir() / "tests/loop/fixtures/slow-task", "solution.txt", true};
}

// Branches 0 and 2 write the same candidate in round 1; every other candidate is its own.
std::string candidate_text(const BranchTask& task, int branch, int round) {
  bool shared = (branch == 0 || branch == 2) && round == 1;
  if (task.slow) {
    return "value = " + std::to_string(shared ? 7 : 10 * branch + round + 1) + "\nsleep = 2\n";
  }
  // A kernel of the starter's family: each branch its own unroll and block (its own region).
  std::string k = testing::read_text(task.dir / "starter" / "kernel.cc");
  int unroll = shared ? 2 : (branch % 3 == 0 ? 1 : branch % 3 == 1 ? 2 : 4);
  int block_k = shared ? 64 : (round == 0 ? 32 : round == 1 ? 64 : 128);
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = k.find(from);
    if (at != std::string::npos) k.replace(at, from.size(), to);
  };
  replace("UNROLL = 1;", "UNROLL = " + std::to_string(unroll) + ";");
  replace("BLOCK_K = 64;", "BLOCK_K = " + std::to_string(block_k) + ";");
  return k + (shared ? "// shared\n"
                     : "// branch " + std::to_string(branch) + " round " + std::to_string(round) +
                           "\n");
}

int branch_of(const json& request) {
  static const std::regex re("You are branch ([0-9]+) of");
  std::smatch m;
  std::string text = request.dump();
  if (!std::regex_search(text, m, re)) return -1;
  return std::stoi(m[1]);
}

// `marathon run` of the slow test task with K branches against a scripted model, then `extra`.
std::vector<std::string> slow_branches_run(const fs::path& run, const ScriptedLlmServer& server,
                                           int branches, std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "run",        (testing::source_dir() / "tests/loop/fixtures/slow-task").string(),
      "--run-dir",  run.string(),
      "--policy",   "llm",
      "--model",    "vllm:scripted",
      "--base-url", server.base_url(),
      "--branches", std::to_string(branches),
      "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// True once the branch's log holds the copy of branch 1's dead end.
bool has_copied_dead_end(const fs::path& dir) {
  try {
    for (const Event& e : events_of_type(load_events(dir), events::LedgerNoted::kType)) {
      if (payload_of<events::LedgerNoted>(e).from_branch == 1) return true;
    }
  } catch (const std::exception&) {
  }
  return false;
}

TEST(Branches, FourBranchesShareDeadEndsResultsAndSlots) {
  const BranchTask task = branch_task();
  TempDir dir("branches");
  fs::path run = dir / "run";
  std::mutex mu;
  std::map<int, std::vector<json>> requests;  // per branch, in order
  ScriptedLlmServer server([&](size_t, const json& request) {
    int b = branch_of(request);
    size_t turn = ScriptedLlmServer::assistant_turns(request);
    {
      std::lock_guard<std::mutex> lock(mu);
      requests[b].push_back(request);
    }
    json calls = json::array();
    if (turn < 3) {
      if (b == 1 && turn == 0)
        calls.push_back(tc("note", {{"kind", "dead_end"}, {"text", kDeadEnd}}));
      if (b == 3 && turn == 2) {
        // Branch 3's next prompt is asked for only once the copy is in its log.
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!has_copied_dead_end(branch_dir(run, 3)) &&
               std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
      calls.push_back(
          tc("write_file", {{"path", task.file}, {"content", candidate_text(task, b, int(turn))}}));
      calls.push_back(tc("evaluate", {{"strategy", "round " + std::to_string(turn)}}));
    } else {
      calls.push_back(tc("finish", {{"summary", "done"}}));
    }
    ScriptedResponse r = b < 0 ? testing::openai_text("no branch named in the prompt")
                               : testing::openai_tool_calls(calls);
    r.delay_s = kThinkS;
    return r;
  });
  fs::path marker = dir / "marks" / "evals.marker";
  std::vector<std::string> args = {"run",        task.dir.string(),
                                   "--run-dir",  run.string(),
                                   "--policy",   "llm",
                                   "--model",    "vllm:scripted",
                                   "--base-url", server.base_url(),
                                   "--branches", std::to_string(kBranches),
                                   "--slots",    "2",
                                   "--quiet"};
  ASSERT_EQ(run_binary(args, testing::eval_marker_env(marker), dir / "run.log", 300), 0)
      << testing::read_text(dir / "run.log");
  std::string out = testing::read_text(dir / "run.log");

  // Every branch is a run of its own that finished.
  std::vector<State> states;
  for (int b = 0; b < kBranches; ++b) {
    states.push_back(testing::load_state(branch_dir(run, b)));
    EXPECT_TRUE(states.back().done) << "branch " << b;
    EXPECT_EQ(states.back().config.value("branch", -1), b);
  }

  // Branch 1's dead end reached branch 3's next prompt, marked with its branch.
  ASSERT_GE(requests[3].size(), 4u);
  EXPECT_THAT(requests[3][3].dump(), HasSubstr("[branch 1] " + kDeadEnd));
  EXPECT_THAT(requests[3][0].dump(), ::testing::Not(HasSubstr(kDeadEnd)));

  // The candidate of branches 0 and 2 was evaluated once; the other branch was served the result.
  const std::string shared_text = candidate_text(task, 0, 1);
  int shared = 0, executed = 0;
  for (int b = 0; b < kBranches; ++b) {
    for (const Event& e :
         events_of_type(load_events(branch_dir(run, b)), events::EvalFinished::kType)) {
      const auto f = payload_of<events::EvalFinished>(e);
      if (f.shared) {
        ++shared;
        EXPECT_TRUE(b == 0 || b == 2) << b;
        EXPECT_EQ(f.status, EvalStatus::kOk);
      }
      if (!f.cached) ++executed;
    }
  }
  EXPECT_EQ(shared, 1);
  EXPECT_EQ(executed, kBranches * 3 - 1);
  if (task.slow) {
    // The evaluator's own count: each candidate ran once, the shared one included.
    std::vector<std::string> marks = read_lines(marker);
    EXPECT_EQ(std::count(marks.begin(), marks.end(), sha256_hex(shared_text)), 1);
    EXPECT_EQ(marks.size(), size_t(kBranches * 3 - 1));
    // The best over branches: branch 3's last candidate (value 33).
    EXPECT_EQ(best_branch(states), 3);
    EXPECT_THAT(out, HasSubstr("best over 4 branches: value 33 (branch 3"));
  } else {
    EXPECT_GE(best_branch(states), 0);
    EXPECT_THAT(out, HasSubstr("best over 4 branches: speedup"));
  }

  // Every evaluation went through one of the two slots (the eval.finished says which).
  std::map<std::string, double> busy;
  double first = 1e300, last = 0;
  for (int b = 0; b < kBranches; ++b) {
    for (const Event& e :
         events_of_type(load_events(branch_dir(run, b)), events::EvalFinished::kType)) {
      const auto f = payload_of<events::EvalFinished>(e);
      if (f.cached) continue;
      ASSERT_TRUE(f.executor);
      std::string where = f.executor->where;
      EXPECT_TRUE(where == "cpu0" || where == "cpu1") << where;
      double elapsed = f.elapsed_s;
      busy[where] += elapsed;
      first = std::min(first, double(e.recorded_at_us) / 1e6 - elapsed);
      last = std::max(last, double(e.recorded_at_us) / 1e6);
    }
  }
  ASSERT_EQ(busy.size(), 2u);
  double span = last - first;
  double fraction = (busy["cpu0"] + busy["cpu1"]) / (2 * span);
  // `status` on the run shows every branch, the best over branches and each slot's busy share.
  ASSERT_EQ(run_binary({"status", run.string()}, {}, dir / "status.log"), 0);
  std::string status = testing::read_text(dir / "status.log");
  EXPECT_THAT(status, HasSubstr("branches   4; best over branches: "));
  EXPECT_THAT(status, HasSubstr("  branch 3  [finished (finish)]"));
  EXPECT_THAT(status, ::testing::ContainsRegex("executor   cpu0 [0-9]+% \\([0-9]+ evals"));
  if (task.slow) {
    EXPECT_THAT(status, HasSubstr("best over branches: value 33 (branch 3)"));
  }
  ASSERT_EQ(run_binary({"status", "--json", run.string()}, {}, dir / "status.json"), 0);
  json sj = json::parse(testing::read_text(dir / "status.json"), nullptr, false);
  ASSERT_TRUE(sj.is_object()) << testing::read_text(dir / "status.json");
  EXPECT_EQ(sj["branches"].size(), 4u);
  EXPECT_EQ(sj["executor_usage"].size(), 2u);
  int evals = 0;
  for (const json& u : sj["executor_usage"]) evals += u["evaluations"].get<int>();
  EXPECT_EQ(evals, kBranches * 3 - 1);

  std::cout << status << "scaleout: " << task.dir.filename().string()
            << ", 4 branches, 2 CPU slots, model delay " << kThinkS << " s: slot busy fraction "
            << fraction << " over " << span << " s (cpu0 " << busy["cpu0"] << " s, cpu1 "
            << busy["cpu1"] << " s)\n"
            << out;
}

}  // namespace
}  // namespace marathon

namespace marathon {
namespace {

// A run with branches killed (SIGKILL, the whole process group) mid-way and resumed: every branch
// carries on and finishes; a note made before the kill is in the other branch's log once.
TEST(Branches, ResumeRestoresEveryBranch) {
  TempDir dir("branches-resume");
  fs::path run = dir / "run";
  ScriptedLlmServer server([&](size_t, const json& request) {
    int b = branch_of(request);
    size_t turn = ScriptedLlmServer::assistant_turns(request);
    json calls = json::array();
    if (turn == 0 && b == 0) calls.push_back(tc("note", {{"kind", "finding"}, {"text", "F0"}}));
    if (turn < 2) {
      std::string text = "value = " + std::to_string(10 * b + int(turn) + 1) + "\nsleep = 1\n";
      calls.push_back(tc("write_file", {{"path", "solution.txt"}, {"content", text}}));
      calls.push_back(tc("evaluate", {{"strategy", "round " + std::to_string(turn)}}));
    } else {
      calls.push_back(tc("finish", {{"summary", "done"}}));
    }
    return b < 0 ? testing::openai_text("no branch") : testing::openai_tool_calls(calls);
  });
  std::vector<std::string> args = slow_branches_run(run, server, 2, {"--slots", "2"});
  args.insert(args.begin(), MARATHON_BINARY);
  {
    testing::Child c(args, {}, dir / "run.log");
    auto evaluated = [&](int b) {
      try {
        return !events_of_type(load_events(branch_dir(run, b)), events::EvalFinished::kType)
                    .empty();
      } catch (const std::exception&) {
        return false;
      }
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!(evaluated(0) && evaluated(1)) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(evaluated(0) && evaluated(1)) << testing::read_text(dir / "run.log");
    c.kill_group();
  }
  for (int b = 0; b < 2; ++b) EXPECT_FALSE(testing::load_state(branch_dir(run, b)).done);
  ASSERT_EQ(run_binary({"resume", run.string(), "--quiet"}, {}, dir / "resume.log", 300), 0)
      << testing::read_text(dir / "resume.log");
  EXPECT_THAT(testing::read_text(dir / "resume.log"), HasSubstr("2 of 2 branches unfinished"));
  for (int b = 0; b < 2; ++b) {
    State s = testing::load_state(branch_dir(run, b));
    EXPECT_TRUE(s.done) << "branch " << b;
    EXPECT_EQ(s.finish_reason, "finish");
    ASSERT_TRUE(s.best_score);
    EXPECT_EQ(*s.best_score, 10 * b + 2);
  }
  int copies = 0;
  for (const Event& e :
       events_of_type(load_events(branch_dir(run, 1)), events::LedgerNoted::kType)) {
    const auto p = payload_of<events::LedgerNoted>(e);
    if (p.from_branch == 0 && p.text == "[branch 0] F0") ++copies;
  }
  EXPECT_EQ(copies, 1) << "branch 0's finding copied once, whatever the kill cut short";
}

}  // namespace
}  // namespace marathon

namespace marathon {
namespace {

// Budgets are the run's: two branches that would each go on forever stop together once their
// tool calls added up reach the run's limit (each alone would make 12).
TEST(Branches, TheBudgetIsTheRunsNotEachBranchs) {
  TempDir dir("branches-budget");
  fs::path run = dir / "run";
  ScriptedLlmServer server([&](size_t, const json& request) {
    int b = branch_of(request);
    size_t turn = ScriptedLlmServer::assistant_turns(request);
    std::string text = "value = " + std::to_string(100 * b + int(turn)) + "\n";
    json calls = json::array({tc("write_file", {{"path", "solution.txt"}, {"content", text}}),
                              tc("evaluate", {{"strategy", "more"}})});
    return b < 0 ? testing::openai_text("no branch") : testing::openai_tool_calls(calls);
  });
  std::vector<std::string> args =
      slow_branches_run(run, server, 2, {"--slots", "2", "--max-tool-calls", "12"});
  ASSERT_EQ(run_binary(args, {}, dir / "run.log", 300), 0) << testing::read_text(dir / "run.log");
  int64_t calls = 0;
  for (int b = 0; b < 2; ++b) {
    State s = testing::load_state(branch_dir(run, b));
    EXPECT_TRUE(s.done);
    EXPECT_EQ(s.finish_reason, "budget") << "branch " << b;
    EXPECT_GE(s.used.tool_calls, 2) << "branch " << b << " worked too";
    calls += s.used.tool_calls;
  }
  // A branch checks the run's use before each call; the other may finish the call it started.
  EXPECT_LE(calls, 13);
  EXPECT_GE(calls, 12);
}

// `marathon stop` on the run directory stops the run, so every branch: each pauses with reason
// "stopped" at its next step, and the runner exits.
TEST(Branches, StopOnTheRunDirStopsEveryBranch) {
  TempDir dir("branches-stop");
  fs::path run = dir / "run";
  ScriptedLlmServer server([&](size_t, const json& request) {
    int b = branch_of(request);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    json calls = json::array({tc("list_files", json::object())});
    return b < 0 ? testing::openai_text("no branch") : testing::openai_tool_calls(calls);
  });
  constexpr int k = 3;
  std::vector<std::string> args = slow_branches_run(run, server, k, {});
  args.insert(args.begin(), MARATHON_BINARY);
  testing::Child c(args, {}, dir / "run.log");
  auto working = [&](int b) {
    try {
      return testing::load_state(branch_dir(run, b)).used.tool_calls >= 2;
    } catch (const std::exception&) {
      return false;
    }
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!(working(0) && working(1) && working(2)) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(working(0) && working(1) && working(2)) << testing::read_text(dir / "run.log");
  ASSERT_EQ(run_binary({"stop", run.string(), "enough"}, {}, dir / "stop.log", 60), 0)
      << testing::read_text(dir / "stop.log");
  EXPECT_THAT(testing::read_text(dir / "stop.log"), HasSubstr("branch(es) 1, 2"));
  std::optional<int> code = c.wait_for(60);
  ASSERT_TRUE(code) << "the runner did not exit after the stop";
  for (int b = 0; b < k; ++b) {
    State s = testing::load_state(branch_dir(run, b));
    EXPECT_TRUE(s.paused) << "branch " << b;
    EXPECT_FALSE(s.done) << "branch " << b;
    auto paused = events_of_type(load_events(branch_dir(run, b)), events::RunPaused::kType);
    ASSERT_FALSE(paused.empty()) << "branch " << b;
    EXPECT_EQ(payload_of<events::RunPaused>(paused.back()).reason, "stopped") << "branch " << b;
  }
}

// A branch forks from another's best: when branch 0 reaches the run's best, branch 1 gets the
// candidate (candidate.imported, its blobs) and a finding naming it; `revert` to it puts branch
// 0's files in branch 1's workspace, and evaluating them there is served from branch 0's result.
TEST(Branches, ABranchForksFromAnothersBest) {
  TempDir dir("branches-fork-best");
  fs::path run = dir / "run";
  const std::string best_text = "value = 50\nsleep = 0\n";
  // The request as JSON text: the note's quotes are escaped there.
  static const std::regex fork_note("candidate \\\\?\"([0-9a-f]{12})\\\\?\" forks your workspace");
  auto last_tool_output = [](const json& request) -> std::string {
    const json& messages = request.at("messages");
    for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
      if (it->value("role", "") == "tool") return it->at("content").dump();
    }
    return "";
  };
  ScriptedLlmServer server([&](size_t, const json& request) {
    int b = branch_of(request);
    size_t turn = ScriptedLlmServer::assistant_turns(request);
    json calls = json::array();
    if (b == 0) {
      if (turn == 0) {
        calls.push_back(tc("write_file", {{"path", "solution.txt"}, {"content", best_text}}));
        calls.push_back(tc("evaluate", {{"strategy", "fifty"}}));
      } else {
        calls.push_back(tc("finish", {{"summary", "done"}}));
      }
    } else if (b == 1) {
      std::smatch m;
      const std::string text = request.dump();
      std::string last = last_tool_output(request);
      if (turn == 0) {
        calls.push_back(
            tc("write_file", {{"path", "solution.txt"}, {"content", "value = 5\nsleep = 0\n"}}));
        calls.push_back(tc("evaluate", {{"strategy", "five"}}));
      } else if (last.find("workspace reverted") != std::string::npos) {
        calls.push_back(tc("evaluate", {{"strategy", "branch 0's best"}}));
      } else if (text.find("branch 0's best") != std::string::npos) {
        calls.push_back(tc("finish", {{"summary", "forked"}}));
      } else if (std::regex_search(text, m, fork_note)) {
        calls.push_back(tc("revert", {{"candidate", m[1].str()}}));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        calls.push_back(tc("list_files", json::object()));
      }
    }
    return b < 0 ? testing::openai_text("no branch") : testing::openai_tool_calls(calls);
  });
  std::vector<std::string> args = slow_branches_run(run, server, 2, {"--max-tool-calls", "200"});
  ASSERT_EQ(run_binary(args, {}, dir / "run.log", 300), 0) << testing::read_text(dir / "run.log");
  State s0 = testing::load_state(branch_dir(run, 0));
  State s1 = testing::load_state(branch_dir(run, 1));
  ASSERT_TRUE(s0.best_score);
  EXPECT_EQ(*s0.best_score, 50);
  auto imported = events_of_type(load_events(branch_dir(run, 1)), events::CandidateImported::kType);
  ASSERT_FALSE(imported.empty()) << "branch 1 never got branch 0's best";
  const auto p = payload_of<events::CandidateImported>(imported.back());
  EXPECT_EQ(p.candidate, s0.best_candidate);
  EXPECT_EQ(p.from_branch, 0);
  EXPECT_EQ(testing::read_text(branch_dir(run, 1) / "workspace" / "solution.txt"), best_text);
  ASSERT_TRUE(s1.best_score) << testing::read_text(dir / "run.log");
  EXPECT_EQ(*s1.best_score, 50) << "branch 1 continued from branch 0's best";
  EXPECT_EQ(s1.best_candidate, s0.best_candidate);
  EXPECT_EQ(s1.evaluations_executed, 1) << "branch 0's candidate was not evaluated again";
  EXPECT_EQ(s0.evaluations_executed, 1);

  // Each branch replays alone to its final state: what the other branch wrote into its log (the
  // imported best, the note) is served as logged, and every evaluation from the log.
  for (int b = 0; b < 2; ++b) {
    fs::path log = dir / ("replay-" + std::to_string(b) + ".log");
    ASSERT_EQ(run_binary({"replay", branch_dir(run, b).string(), "--run-dir",
                          (dir / ("replay-" + std::to_string(b))).string(), "--quiet"},
                         {}, log, 120),
              0)
        << testing::read_text(log);
    EXPECT_THAT(testing::read_text(log), HasSubstr("final state matches the original"))
        << "branch " << b;
  }
}

}  // namespace
}  // namespace marathon
