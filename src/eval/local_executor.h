// The local executor: a pool of slots on this host, one evaluation per slot at a time. A slot is a
// GPU (its id in CUDA_VISIBLE_DEVICES, set for the evaluator's sandbox alone) or, on a host with no
// GPU, a CPU slot standing in for one. A slot whose evaluations fault (crash) or hang (timeout)
// twice in a row is quarantined and reported (executor.slot_quarantined); the last healthy slot
// is never quarantined, so a run keeps one slot whatever its candidates do.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "eval/executor.h"

namespace marathon::eval {

inline constexpr int kFaultsBeforeQuarantine = 2;

// Pure: the GPU ids of this host, from CUDA_VISIBLE_DEVICES when it is set (its comma-separated
// entries; empty or "-1": none) else from `nvidia-smi -L` output (one "GPU N: ..." line each; an
// index per line). nullopt output: nvidia-smi did not run.
std::vector<std::string> gpu_ids(const std::optional<std::string>& cuda_visible_devices,
                                 const std::optional<std::string>& nvidia_smi_list);

// This host's GPU ids (CUDA_VISIBLE_DEVICES, else `nvidia-smi -L` run once, 5 s timeout).
std::vector<std::string> detect_gpu_ids();

// Pure: the slot names for a spec on a host with these GPUs: "gpu<ID>" for the first spec.slots
// GPUs (all when 0) when spec.gpus or (spec.slots == 0 and there are GPUs); else spec.slots
// (at least 1) "cpu<N>". Throws std::runtime_error when spec.gpus asks for more GPUs than exist.
std::vector<std::string> slot_names(const ExecutorSpec& spec, const std::vector<std::string>& gpus);

// Runs an evaluation on one slot: the evaluator through the sandbox launcher (tests substitute a
// function of their own to script faults).
using SlotRunner = std::function<EvalOutcome(const EvalRequest&, const EvalOptions&)>;

class LocalExecutor : public Executor {
 public:
  // `slots`: names from slot_names(); a "gpu<ID>" slot sets CUDA_VISIBLE_DEVICES=<ID> per child.
  explicit LocalExecutor(std::vector<std::string> slots, SlotRunner runner = {});

  ExecutorSpec spec() const override;
  ExecutedEval evaluate(const EvalRequest& request, const EventSink& log) override;
  std::vector<SlotUsage> usage() const override;

 private:
  struct Slot {
    std::string name;
    bool busy = false;
    bool quarantined = false;
    int faults_in_a_row = 0;
    int64_t evaluations = 0;
    double busy_s = 0;
  };
  size_t acquire();
  // Releases slot i after an outcome; returns the quarantine event to log, if it now is one.
  std::optional<NewEvent> release(size_t i, const EvalOutcome& o);

  SlotRunner runner_;
  mutable std::mutex mu_;
  std::condition_variable free_;
  std::vector<Slot> slots_;
};

}  // namespace marathon::eval
