#include "eval/local_executor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "sandbox/launcher.h"

namespace marathon::eval {

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

bool is_fault(const EvalOutcome& o) {
  return o.status == EvalStatus::kCrash || o.status == EvalStatus::kTimeout;
}

}  // namespace

std::vector<std::string> gpu_ids(const std::optional<std::string>& cuda_visible_devices,
                                 const std::optional<std::string>& nvidia_smi_list) {
  std::vector<std::string> ids;
  if (cuda_visible_devices) {
    std::string v = trim(*cuda_visible_devices);
    if (v.empty() || v == "-1") return ids;
    std::stringstream in(v);
    std::string item;
    while (std::getline(in, item, ',')) {
      item = trim(item);
      if (!item.empty()) ids.push_back(item);
    }
    return ids;
  }
  if (!nvidia_smi_list) return ids;
  std::stringstream in(*nvidia_smi_list);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (trim(line).rfind("GPU ", 0) == 0) ids.push_back(std::to_string(n++));
  }
  return ids;
}

std::vector<std::string> detect_gpu_ids() {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) return gpu_ids(std::string(v), {});
  sandbox::LaunchSpec spec;
  spec.profile = sandbox::Profile::kHostTool;
  spec.isolation = sandbox::Isolation::kNone;
  spec.argv = {"nvidia-smi", "-L"};
  spec.timeout_s = 5;
  spec.drain_s = 0.2;
  sandbox::LaunchResult p = sandbox::launch(spec);
  bool ok = p.started && !p.timed_out && p.signal == 0 && p.exit_code == 0;
  return gpu_ids(std::nullopt, ok ? std::optional<std::string>(p.out) : std::nullopt);
}

std::vector<std::string> slot_names(const ExecutorSpec& spec,
                                    const std::vector<std::string>& gpus) {
  std::vector<std::string> names;
  if (spec.gpus || (spec.slots == 0 && !gpus.empty())) {
    size_t n = spec.slots > 0 ? size_t(spec.slots) : gpus.size();
    if (n > gpus.size()) {
      throw std::runtime_error(
          fmt::format("--gpus {}: this host has {} GPU(s) (CUDA_VISIBLE_DEVICES or nvidia-smi -L)",
                      n, gpus.size()));
    }
    for (size_t i = 0; i < n; ++i) names.push_back("gpu" + gpus[i]);
    return names;
  }
  int n = spec.slots > 0 ? spec.slots : 1;
  for (int i = 0; i < n; ++i) names.push_back("cpu" + std::to_string(i));
  return names;
}

LocalExecutor::LocalExecutor(std::vector<std::string> slots, SlotRunner runner)
    : runner_(std::move(runner)) {
  if (slots.empty()) throw std::runtime_error("the local executor needs at least one slot");
  for (std::string& n : slots) slots_.push_back(Slot{std::move(n)});
  if (!runner_) {
    runner_ = [](const EvalRequest& r, const EvalOptions& o) {
      return run_evaluator(*r.task, r.candidate_dir, o);
    };
  }
}

ExecutorSpec LocalExecutor::spec() const {
  ExecutorSpec s;
  s.kind = ExecutorKind::kLocal;
  s.slots = int(slots_.size());
  s.gpus = slots_.front().name.rfind("gpu", 0) == 0;
  return s;
}

size_t LocalExecutor::acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (!slots_[i].busy && !slots_[i].quarantined) {
        slots_[i].busy = true;
        return i;
      }
    }
    free_.wait(lock);
  }
}

std::optional<NewEvent> LocalExecutor::release(size_t i, const EvalOutcome& o) {
  std::optional<NewEvent> event;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[i];
    s.busy = false;
    s.evaluations += 1;
    s.busy_s += o.elapsed_s;
    s.faults_in_a_row = is_fault(o) ? s.faults_in_a_row + 1 : 0;
    size_t healthy = 0;
    for (const Slot& x : slots_) healthy += x.quarantined ? 0 : 1;
    if (s.faults_in_a_row >= kFaultsBeforeQuarantine && healthy > 1) {
      s.quarantined = true;
      events::ExecutorSlotQuarantined q;
      q.executor = spec().to_string();
      q.slot = s.name;
      q.faults_in_a_row = s.faults_in_a_row;
      q.last_status = o.status;
      q.healthy_slots = static_cast<int64_t>(healthy - 1);
      event = make_event(q);
      spdlog::warn("local executor: slot {} quarantined after {} faulted or hung evaluations",
                   s.name, s.faults_in_a_row);
    }
  }
  free_.notify_all();
  return event;
}

ExecutedEval LocalExecutor::evaluate(const EvalRequest& request, const EventSink& log) {
  size_t i = acquire();
  EvalOptions options = request.options;
  const std::string& name = slots_[i].name;  // names never change after construction
  if (name.rfind("gpu", 0) == 0) options.env["CUDA_VISIBLE_DEVICES"] = name.substr(3);
  ExecutedEval out;
  out.where = name;
  try {
    out.outcome = runner_(request, options);
  } catch (const std::exception& e) {
    out.outcome.status = EvalStatus::kCrash;
    out.outcome.result = failed_result(EvalStatus::kCrash, e.what());
  }
  if (std::optional<NewEvent> q = release(i, out.outcome)) {
    if (log) log(*q);
  }
  return out;
}

std::vector<SlotUsage> LocalExecutor::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SlotUsage> out;
  for (const Slot& s : slots_) out.push_back({s.name, s.quarantined, s.evaluations, s.busy_s});
  return out;
}

}  // namespace marathon::eval
