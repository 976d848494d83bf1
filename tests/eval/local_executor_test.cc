// The local executor: GPU ids from CUDA_VISIBLE_DEVICES or nvidia-smi -L, slot names, one
// evaluation per slot at a time with CUDA_VISIBLE_DEVICES set per child, and quarantine of a slot
// whose evaluations fault or hang twice in a row.
#include "eval/local_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

namespace marathon::eval {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(GpuIds, FromCudaVisibleDevicesWhenSet) {
  EXPECT_THAT(gpu_ids(std::string("0,2"), std::string("GPU 0: a\nGPU 1: b\n")),
              ElementsAre("0", "2"));
  EXPECT_THAT(gpu_ids(std::string(" GPU-ab12 , 3 "), std::nullopt), ElementsAre("GPU-ab12", "3"));
  EXPECT_TRUE(gpu_ids(std::string(""), std::string("GPU 0: a\n")).empty());
  EXPECT_TRUE(gpu_ids(std::string("-1"), std::nullopt).empty());
}

TEST(GpuIds, ElseOneIndexPerNvidiaSmiLine) {
  EXPECT_THAT(gpu_ids(std::nullopt,
                      std::string("GPU 0: NVIDIA H100 (UUID: GPU-1)\nGPU 1: NVIDIA H100 (UUID: "
                                  "GPU-2)\n  MIG 1g.10gb Device 0: (UUID: MIG-x)\n")),
              ElementsAre("0", "1"));
  EXPECT_TRUE(gpu_ids(std::nullopt, std::nullopt).empty());
}

TEST(SlotNames, GpusWhenThereAreSomeElseCpuSlots) {
  ExecutorSpec s;
  EXPECT_THAT(slot_names(s, {"0", "1"}), ElementsAre("gpu0", "gpu1"));
  EXPECT_THAT(slot_names(s, {}), ElementsAre("cpu0"));
  s.slots = 3;
  EXPECT_THAT(slot_names(s, {}), ElementsAre("cpu0", "cpu1", "cpu2"));
  EXPECT_THAT(slot_names(s, {"4"}), ElementsAre("cpu0", "cpu1", "cpu2"));  // --slots: CPU slots
  s.gpus = true;
  s.slots = 1;
  EXPECT_THAT(slot_names(s, {"4", "5"}), ElementsAre("gpu4"));
  s.slots = 3;
  try {
    slot_names(s, {"4", "5"});
    FAIL() << "three GPUs of two";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--gpus 3: this host has 2 GPU(s)"));
  }
}

EvalOutcome outcome(EvalStatus status, double elapsed = 0.01) {
  EvalOutcome o;
  o.status = status;
  o.result = status == EvalStatus::kOk ? json{{"correct", true}, {"score", 1}}
                                       : failed_result(status, "scripted");
  o.elapsed_s = elapsed;
  return o;
}

TEST(LocalExecutor, OneEvaluationPerSlotAtATimeEachWithItsOwnDevice) {
  std::mutex mu;
  std::set<std::string> running;  // CUDA_VISIBLE_DEVICES of the evaluations running now
  size_t most = 0;
  std::atomic<int> clashes{0};
  LocalExecutor x({"gpu3", "gpu5"}, [&](const EvalRequest&, const EvalOptions& o) {
    std::string dev = o.env.at("CUDA_VISIBLE_DEVICES");
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!running.insert(dev).second) ++clashes;
      most = std::max(most, running.size());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    {
      std::lock_guard<std::mutex> lock(mu);
      running.erase(dev);
    }
    return outcome(EvalStatus::kOk, 0.03);
  });
  std::vector<std::thread> threads;
  std::vector<std::string> where(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] { where[i] = x.evaluate(EvalRequest{}, {}).where; });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(clashes, 0) << "two evaluations shared a GPU";
  EXPECT_EQ(most, 2u) << "both GPUs were used at once";
  for (const std::string& w : where) EXPECT_TRUE(w == "gpu3" || w == "gpu5") << w;
  std::vector<SlotUsage> u = x.usage();
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].evaluations + u[1].evaluations, 6);
  EXPECT_NEAR(u[0].busy_s + u[1].busy_s, 6 * 0.03, 1e-9);
}

TEST(LocalExecutor, ASlotFaultingTwiceInARowIsQuarantinedAndReported) {
  // gpu1 crashes and hangs; gpu0 works. Evaluations one at a time take the first free slot.
  std::vector<std::string> order;
  int gpu1_calls = 0;
  LocalExecutor x({"gpu1", "gpu0"}, [&](const EvalRequest&, const EvalOptions& o) {
    std::string dev = o.env.at("CUDA_VISIBLE_DEVICES");
    order.push_back(dev);
    if (dev != "1") return outcome(EvalStatus::kOk);
    return outcome(++gpu1_calls == 1 ? EvalStatus::kCrash : EvalStatus::kTimeout);
  });
  std::vector<NewEvent> logged;
  auto log = [&](const NewEvent& e) { logged.push_back(e); };
  EXPECT_EQ(x.evaluate(EvalRequest{}, log).outcome.status, EvalStatus::kCrash);
  EXPECT_TRUE(logged.empty()) << "one fault is no quarantine";
  EXPECT_EQ(x.evaluate(EvalRequest{}, log).outcome.status, EvalStatus::kTimeout);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].type, events::ExecutorSlotQuarantined::kType);
  const auto q = logged[0].payload.get<events::ExecutorSlotQuarantined>();
  EXPECT_EQ(q.slot, "gpu1");
  EXPECT_EQ(q.faults_in_a_row, 2);
  EXPECT_EQ(q.last_status, EvalStatus::kTimeout);
  for (int i = 0; i < 3; ++i) {
    ExecutedEval r = x.evaluate(EvalRequest{}, log);
    EXPECT_EQ(r.where, "gpu0");
    EXPECT_EQ(r.outcome.status, EvalStatus::kOk);
  }
  EXPECT_THAT(order, ElementsAre("1", "1", "0", "0", "0"));
  EXPECT_EQ(logged.size(), 1u);
  EXPECT_TRUE(x.usage()[0].quarantined);
  EXPECT_FALSE(x.usage()[1].quarantined);
}

TEST(LocalExecutor, AFaultBetweenSuccessesIsNoQuarantineAndTheLastSlotStays) {
  int n = 0;
  LocalExecutor x({"gpu0"}, [&](const EvalRequest&, const EvalOptions&) {
    ++n;
    return outcome(n == 2 ? EvalStatus::kOk : EvalStatus::kCrash);
  });
  std::vector<NewEvent> logged;
  auto log = [&](const NewEvent& e) { logged.push_back(e); };
  for (int i = 0; i < 5; ++i) x.evaluate(EvalRequest{}, log);
  EXPECT_TRUE(logged.empty()) << "the only slot is never quarantined";
  EXPECT_FALSE(x.usage()[0].quarantined);

  int m = 0;
  LocalExecutor y({"cpu0", "cpu1"}, [&](const EvalRequest&, const EvalOptions& o) {
    EXPECT_EQ(o.env.count("CUDA_VISIBLE_DEVICES"), 0u) << "a CPU slot names no device";
    ++m;
    return outcome(m % 2 ? EvalStatus::kCrash : EvalStatus::kOk);  // crash, ok, crash, ok ...
  });
  for (int i = 0; i < 6; ++i) y.evaluate(EvalRequest{}, log);
  EXPECT_TRUE(logged.empty());
}

// The real evaluator through the sandbox launcher: the slot's device reaches the child.
TEST(LocalExecutor, TheChildSeesItsSlotsDevice) {
  fs::path task_dir = fs::path(MARATHON_SOURCE_DIR) / "tests/loop/fixtures/slow-task";
  TaskSpec task = load_task(task_dir);
  LocalExecutor x({"gpu7"});
  EvalRequest r;
  r.task = &task;
  r.task_dir = task_dir;
  r.candidate_dir = task_dir / "starter";
  if (!sandbox::sandbox_unavailable_reason().empty()) {
    r.options.isolation = sandbox::Isolation::kNone;
  }
  ExecutedEval e = x.evaluate(r, {});
  EXPECT_EQ(e.where, "gpu7");
  ASSERT_EQ(e.outcome.status, EvalStatus::kOk) << e.outcome.result.dump();
  EXPECT_THAT(e.outcome.result.value("log", ""), HasSubstr("devices [7]"));
}

}  // namespace
}  // namespace marathon::eval
