// marathon run TASK_DIR ...   : a new run on a task
// marathon resume RUN_DIR     : carry on a stopped (paused, killed) run from its log
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/budget_flags.h"
#include "cli/commands.h"
#include "cli/installation.h"
#include "cli/usage.h"
#include "context/prompt_texts.h"
#include "core/event_store.h"
#include "core/events.h"
#include "core/fold.h"
#include "core/load_state.h"
#include "core/run_dir.h"
#include "core/run_lock.h"
#include "eval/executor.h"
#include "eval/ray_executor.h"
#include "goal/limits.h"
#include "goal/task_spec.h"
#include "llm/http_client.h"
#include "llm/model_table.h"
#include "llm/pricing.h"
#include "llm/provider_registry.h"
#include "loop/branches.h"
#include "loop/drive.h"
#include "loop/replay.h"
#include "loop/run_setup.h"
#include "policy/registry.h"
#include "policy/replay_policy.h"
#include "sandbox/launcher.h"

namespace marathon::cli {

namespace fs = std::filesystem;

namespace {

struct RunArgs {
  std::string task_dir;
  std::string run_dir;
  std::string policy;
  std::string model;
  std::string base_url;
  std::string api_key_env;
  BudgetFlags budget;
  std::optional<double> target;
  std::optional<int64_t> context_window;
  std::optional<double> model_timeout;
  std::optional<int64_t> max_output_tokens;
  std::string reasoning_effort;
  std::optional<int64_t> thinking_budget;
  std::optional<double> temperature;
  std::optional<double> price_in;   // USD per million prompt tokens
  std::optional<double> price_out;  // USD per million completion tokens
  bool stream = false;
  int goal_auto_pause = 5;
  bool quiet = false;
  bool unsafe_no_sandbox = false;
  bool allow_no_key = false;
  bool json = false;     // the summary as one JSON object on stdout, nothing else there
  std::string executor;  // local | ray://HOST:PORT
  int gpus = 0;
  int slots = 0;
  std::string ray_worker_binary;
  int branches = 1;
};

// The executor the flags ask for; nullopt with *error naming the flag.
std::optional<eval::ExecutorSpec> executor_spec(const RunArgs& a, std::string* error) {
  std::string why;
  std::optional<eval::ExecutorSpec> spec = eval::parse_executor(a.executor, &why);
  if (!spec) {
    *error = "--executor " + why;
    return std::nullopt;
  }
  if (a.gpus < 0 || a.slots < 0 || a.gpus > 4096 || a.slots > 4096) {
    *error = "--gpus and --slots take a count from 1 to 4096";
    return std::nullopt;
  }
  if (a.gpus > 0 && a.slots > 0) {
    *error = "--gpus and --slots exclude each other (GPU slots or CPU slots)";
    return std::nullopt;
  }
  if (spec->kind == eval::ExecutorKind::kRay && (a.gpus > 0 || a.slots > 0)) {
    *error = "--gpus and --slots size the local executor; a Ray cluster has its own";
    return std::nullopt;
  }
  if (spec->kind != eval::ExecutorKind::kRay && !a.ray_worker_binary.empty()) {
    *error = "--ray-worker-binary goes with --executor ray://HOST:PORT";
    return std::nullopt;
  }
  spec->gpus = a.gpus > 0;
  spec->slots = a.gpus > 0 ? a.gpus : a.slots;
  if (!a.ray_worker_binary.empty()) spec->worker_binary = a.ray_worker_binary;
  return spec;
}

// --model-timeout: positive, finite seconds (libcurl reads 0 as "no limit"), at most a day.
std::optional<std::string> model_timeout_problem(double seconds) {
  return range_problem(seconds, 0, false, 86400);
}

bool have_gpu() { return std::system("nvidia-smi -L >/dev/null 2>&1") == 0; }

std::string default_run_dir(const std::string& task_name) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  return fmt::format("runs/{}-{}", task_name, buf);
}

// The model's name without its PROVIDER: part.
std::string model_name(const std::string& model) {
  return model.substr(model.find(':') == std::string::npos ? 0 : model.find(':') + 1);
}

// Whether `model` (PROVIDER:MODEL) has a price: --price-in/--price-out, the task's [prices], or the
// model table (exact name or dated snapshot; nothing is guessed for a model it does not list).
bool model_has_price(const RunArgs& a, const TaskSpec& task, const std::string& model) {
  if (a.price_in && a.price_out) return true;
  if (task.prices.is_object() && task.prices.contains(model)) return true;
  return llm::PriceTable().lookup(model_name(model)).has_value();
}

// What is wrong or worth saying at the start of an llm run about the model's price and the
// parameters asked for it: `*refusal` is set when the run must not start (a cost budget on a
// model with no price), `warnings` get the rest.
void check_model_options(const RunArgs& a, const TaskSpec& task, const std::string& model,
                         std::string* refusal, std::vector<std::string>* warnings) {
  if (!model_has_price(a, task, model)) {
    const std::string where = fmt::format(
        "model {} has no price (the model table of {} does not list it, nor does the task's "
        "[prices])",
        model, llm::kModelTableDate);
    const std::string how = fmt::format(
        "give --price-in USD/Mtok --price-out USD/Mtok, or add [prices] \"{}\" = {{ prompt = "
        "USD/Mtok, completion = USD/Mtok }} to task.toml",
        model);
    if (a.budget.max_cost) {
      *refusal = fmt::format(
          "--max-cost {:.6g}: {}, so its calls would count as $0 and the cost budget could never "
          "stop this run; {}, or use --max-tokens",
          *a.budget.max_cost, where, how);
      return;
    }
    warnings->push_back(fmt::format("{}: its calls count as $0; {}", where, how));
  }
  const std::string provider = model.substr(0, model.find(':'));
  const llm::ProviderInfo* info = llm::find_provider(provider);
  llm::AskedParameters asked;
  asked.temperature = a.temperature;
  asked.reasoning_effort = a.reasoning_effort;
  asked.thinking_budget = a.thinking_budget.value_or(0);
  for (std::string& w :
       llm::unsent_parameters(info ? info->wire : "openai", model_name(model), asked)) {
    warnings->push_back(std::move(w));
  }
}

// Preflight of an llm run, before anything is written: the provider's key is in its variable
// (unless --allow-no-key: a local server that needs none) and the base URL takes a connection.
// "" when both hold, else the one line that says what is wrong and how to fix it.
std::string model_preflight_problem(const RunArgs& a, const std::string& model) {
  llm::ModelSpec spec;
  try {
    spec = llm::parse_model_spec(model);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  const llm::ProviderInfo* info = llm::find_provider(spec.provider);
  const std::string key_env = !a.api_key_env.empty() ? a.api_key_env : info->default_key_env;
  if (!key_env.empty() && !a.allow_no_key) {
    const char* key = std::getenv(key_env.c_str());
    if (key == nullptr || *key == '\0') {
      return fmt::format(
          "provider {} reads its API key from env {}, which is not set: export {}=..., or name "
          "another variable with --api-key-env NAME (--allow-no-key for a server that needs "
          "none)",
          spec.provider, key_env, key_env);
    }
  }
  const std::string url = !a.base_url.empty() ? a.base_url : info->default_base_url;
  if (std::string why = llm::connect_problem(url, 10); !why.empty()) {
    return fmt::format(
        "the model's base URL {} cannot be reached ({}): check --base-url and the "
        "network",
        url, why);
  }
  return "";
}

// The policy the run would get, made from the run.created it would log: a bad --model or a
// search run on a task without knobs is refused before a run folder exists.
std::string policy_problem(const TaskSpec& task, const NewRunOptions& o) {
  Event e;
  e.seq = 1;
  e.type = events::RunCreated::kType;
  e.payload = run_created_payload(task, o, "preflight");
  State s;
  try {
    apply(s, e);
    make_policy(o.policy, PolicyOptions{&s, nullptr});
  } catch (const std::exception& ex) {
    return ex.what();
  }
  return "";
}

// The first flag whose value is out of range, as "--flag: problem" (goal/limits.h); "" when all
// are usable.
std::string flag_problem(const RunArgs& a) {
  std::vector<std::pair<const char*, std::optional<std::string>>> checks;
  check_budget_flags(a.budget, checks);
  if (a.target) checks.emplace_back("--target", target_problem(*a.target));
  if (a.context_window) {
    checks.emplace_back("--context-window",
                        range_problem(double(*a.context_window), 0, false, 1e9));
  }
  if (a.model_timeout)
    checks.emplace_back("--model-timeout", model_timeout_problem(*a.model_timeout));
  if (a.max_output_tokens) {
    checks.emplace_back("--max-output-tokens",
                        range_problem(double(*a.max_output_tokens), 1, true, 1e7));
  }
  if (a.thinking_budget) {
    checks.emplace_back("--thinking-budget",
                        range_problem(double(*a.thinking_budget), 1024, true, 1e7));
  }
  if (!a.reasoning_effort.empty()) {
    // The values of the official SDK's reasoning_effort (openai 3.63.0).
    static const std::vector<std::string> kEfforts = {"none", "minimal", "low", "medium",
                                                      "high", "xhigh",   "max"};
    if (std::find(kEfforts.begin(), kEfforts.end(), a.reasoning_effort) == kEfforts.end()) {
      checks.emplace_back("--reasoning-effort",
                          "expected none, minimal, low, medium, high, xhigh or max, got \"" +
                              a.reasoning_effort + "\"");
    }
  }
  if (a.temperature)
    checks.emplace_back("--temperature", range_problem(*a.temperature, 0, true, 2));
  if (a.price_in) checks.emplace_back("--price-in", range_problem(*a.price_in, 0, true, 1e6));
  if (a.price_out) checks.emplace_back("--price-out", range_problem(*a.price_out, 0, true, 1e6));
  if (a.price_in.has_value() != a.price_out.has_value()) {
    checks.emplace_back(
        "--price-in", std::optional<std::string>("--price-in and --price-out go together (USD per "
                                                 "million prompt and completion tokens)"));
  }
  checks.emplace_back("--goal-auto-pause", range_problem(a.goal_auto_pause, 0, true, 1e6));
  if (a.branches < 1 || a.branches > kMaxBranches) {
    checks.emplace_back("--branches", fmt::format("must be a count from 1 to {}, got {}",
                                                  kMaxBranches, a.branches));
  }
  for (const auto& [flag, why] : checks) {
    if (why) return fmt::format("{}: {}", flag, *why);
  }
  return "";
}

// Drives the branches, prints their summary; the exit code: 1 when a branch failed, else 0.
int drive_branches_and_report(const std::vector<Branch>& branches, const fs::path& run_dir,
                              bool quiet, eval::Executor* executor, bool json_summary = false) {
  BranchesOptions bo;
  bo.quiet = quiet || json_summary;
  bo.executor = executor;
  BranchesReport r = drive_branches(branches, bo);
  int rc = 0;
  for (const RunReport& rep : r.reports) rc = std::max(rc, exit_code_for(rep));
  if (json_summary) {
    json j = {{"run_dir", run_dir.string()},
              {"exit_code", rc},
              {"best_branch", r.best >= 0 ? json(r.best) : json(nullptr)},
              {"branches", json::array()}};
    for (size_t i = 0; i < r.reports.size() && i < r.states.size(); ++i) {
      j["branches"].push_back(
          run_summary_json(r.states[i], r.reports[i], branch_dir(run_dir, int(i)).string()));
    }
    std::puts(j.dump().c_str());
  } else {
    std::fputs(branches_summary(r, run_dir).c_str(), stdout);
  }
  std::fflush(stdout);
  return rc;
}

int do_run(const RunArgs& a) {
  if (std::string why = flag_problem(a); !why.empty()) {
    spdlog::error("run: {}", why);
    return 2;
  }
  TaskSpec task;
  try {
    task = load_task(resolve_task_dir(a.task_dir));
  } catch (const TaskError& e) {
    spdlog::error("{}", e.what());
    return 2;
  }
  std::string executor_error;
  std::optional<eval::ExecutorSpec> espec = executor_spec(a, &executor_error);
  if (!espec) {
    spdlog::error("run: {}", executor_error);
    return 2;
  }
  if (task.needs_gpu && espec->kind == eval::ExecutorKind::kLocal && !have_gpu()) {
    spdlog::error("task {} needs a GPU and this machine has none (nvidia-smi found no device)",
                  task.name);
    return 2;
  }
  std::unique_ptr<eval::Executor> executor;
  try {
    executor = eval::make_executor(*espec);
  } catch (const std::exception& e) {
    spdlog::error("run: {}", e.what());
    return 2;
  }
  SandboxGate gate = sandbox_gate(a.unsafe_no_sandbox, "run");
  if (!gate.ok) return 2;
  // The workers must be able to run `marathon eval`: one tiny job before anything is written.
  if (espec->kind == eval::ExecutorKind::kRay) {
    if (std::string why = eval::ray_preflight_problem(*espec); !why.empty()) {
      spdlog::error("run: {}", why);
      return 2;
    }
  }
  if (!a.api_key_env.empty()) sandbox::never_pass(a.api_key_env);
  NewRunOptions o;
  o.extra_config["executor"] = espec->to_json();
  o.model = a.model;
  if (o.model.empty()) {
    if (const char* m = std::getenv("MARATHON_MODEL")) o.model = m;
  }
  o.policy = !a.policy.empty() ? a.policy : (o.model.empty() ? "search" : "llm");
  if (o.policy != "llm" && o.policy != "search") {
    spdlog::error("--policy {}: a new run takes llm or search (replay: `marathon replay`)",
                  o.policy);
    return 2;
  }
  if (o.policy == "llm" && o.model.empty()) {
    spdlog::error("--policy llm needs --model PROVIDER:MODEL (or MARATHON_MODEL)");
    return 2;
  }
  o.run_dir = a.run_dir.empty() ? default_run_dir(task.name) : a.run_dir;
  o.base_url = a.base_url;
  o.api_key_env = a.api_key_env;
  o.max_tool_calls = a.budget.max_tool_calls;
  o.max_hours = a.budget.max_hours;
  o.max_cost_usd = a.budget.max_cost;
  o.max_tokens = a.budget.max_tokens;
  o.max_gpu_s = a.budget.max_gpu_s;
  o.target = a.target;
  o.context_window = a.context_window;
  o.model_timeout_s = a.model_timeout;
  o.goal_auto_pause_turns = a.goal_auto_pause;
  if (a.max_output_tokens) o.extra_config["max_output_tokens"] = *a.max_output_tokens;
  if (!a.reasoning_effort.empty()) o.extra_config["reasoning_effort"] = a.reasoning_effort;
  if (a.thinking_budget) o.extra_config["thinking_budget"] = *a.thinking_budget;
  if (a.temperature) o.extra_config["temperature"] = *a.temperature;
  if (a.price_in && a.price_out) {
    o.extra_config["price"] = {{"input", *a.price_in}, {"output", *a.price_out}};
  }
  if (a.stream) o.extra_config["stream"] = true;
  if (o.policy == "llm") {
    std::string refusal;
    std::vector<std::string> warnings;
    check_model_options(a, task, o.model, &refusal, &warnings);
    if (!refusal.empty()) {
      spdlog::error("run: {}", refusal);
      return 2;
    }
    if (std::string why = model_preflight_problem(a, o.model); !why.empty()) {
      spdlog::error("run: {}", why);
      return 2;
    }
    for (const std::string& w : warnings) spdlog::warn("{}", w);
  }
  if (std::string why = policy_problem(task, o); !why.empty()) {
    spdlog::error("run: {}", why);
    return 2;
  }

  // One run per branch (loop/branches.h): branch 0 in the run directory, the others below it.
  const int k = a.branches;
  if (k > 1) o.extra_config["branches"] = k;
  std::deque<RunLock> locks;
  std::vector<std::unique_ptr<EventStore>> stores;
  std::deque<State> states;  // each policy keeps a pointer to its branch's state
  std::vector<std::unique_ptr<Policy>> policies;
  for (int i = 0; i < k; ++i) {
    NewRunOptions oi = o;
    oi.run_dir = branch_dir(o.run_dir, i);
    if (k > 1) {
      oi.extra_config["branch"] = i;
      oi.objective_note = context::branch_note(i, k);
    }
    std::error_code ec;
    if (i > 0) fs::create_directories(oi.run_dir.parent_path(), ec);
    try {
      locks.push_back(RunLock::acquire_new(oi.run_dir));
    } catch (const StoreError& e) {
      spdlog::error("run: {}", e.what());
      return 1;
    }
    std::unique_ptr<EventStore> store;
    try {
      store = create_run(task, oi);
    } catch (...) {
      locks.back().abandon_new();
      throw;
    }
    RunLock* lock = &locks.back();
    store->set_write_guard([lock] { lock->verify(); });
    if (gate.unsandboxed) {
      store->append(make_event(events::SandboxDisabled{gate.reason, "run"}));
    }
    states.push_back(fold(store->read()));
    try {
      policies.push_back(make_policy(o.policy, PolicyOptions{&states.back(), nullptr}));
    } catch (const std::invalid_argument& e) {
      spdlog::error("{}", e.what());
      return 2;
    }
    stores.push_back(std::move(store));
  }
  if (!a.json)
    std::printf("marathon: run %s on task %s, policy %s%s%s\n", o.run_dir.string().c_str(),
                task.name.c_str(), o.policy.c_str(),
                o.model.empty() ? "" : fmt::format(" ({})", o.model).c_str(),
                k > 1 ? fmt::format(", {} branches", k).c_str() : "");
  std::fflush(stdout);
  if (k == 1) {
    DriveOptions options{a.quiet, {}};
    options.json_summary = a.json;
    options.executor = executor.get();
    return exit_code_for(drive(*stores[0], o.run_dir, *policies[0], options));
  }
  std::vector<Branch> branches;
  for (int i = 0; i < k; ++i) {
    branches.push_back(
        {branch_dir(o.run_dir, i), stores[size_t(i)].get(), policies[size_t(i)].get()});
  }
  return drive_branches_and_report(branches, o.run_dir, a.quiet, executor.get(), a.json);
}

// Resumes every branch of a run with branches (branch 0's log is open in *store0, nullptr when it
// has finished; its lock is held by the caller).
int resume_branches(const fs::path& run_dir, bool quiet, const json& overrides,
                    const SandboxGate& gate, RunLock& lock0, std::unique_ptr<EventStore> store0,
                    const State& state0) {
  const int k = branch_count(state0);
  std::deque<RunLock> locks;
  std::vector<std::unique_ptr<EventStore>> stores;
  std::deque<State> states;
  std::vector<std::unique_ptr<Policy>> policies;
  int unfinished = 0;
  for (int i = 0; i < k; ++i) {
    fs::path dir = branch_dir(run_dir, i);
    State si;
    std::unique_ptr<EventStore> st;
    RunLock* lock = &lock0;
    if (i == 0) {
      si = state0;
      st = std::move(store0);
    } else {
      try {
        locks.push_back(RunLock::acquire(existing_run_dir(dir).root));
      } catch (const StoreError& e) {
        spdlog::error("resume: branch {}: {}", i, e.what());
        return 1;
      }
      lock = &locks.back();
      st = reopen_run(dir, &si, overrides);
    }
    if (st) {
      ++unfinished;
      st->set_write_guard([lock] { lock->verify(); });
      if (gate.unsandboxed) {
        st->append(make_event(events::SandboxDisabled{gate.reason, "resume"}));
      }
    } else {
      // Finished: its runner only reports it (nothing is appended to a finished run).
      st = EventStore::open((dir / "events.db").string(), EventStore::Mode::kOpen);
    }
    if (std::string key_env = si.config.value("api_key_env", ""); !key_env.empty()) {
      sandbox::never_pass(key_env);
    }
    states.push_back(si);
    try {
      policies.push_back(
          make_policy(si.config.value("policy", "search"), PolicyOptions{&states.back(), nullptr}));
    } catch (const std::invalid_argument& e) {
      spdlog::error("{}", e.what());
      return 2;
    }
    stores.push_back(std::move(st));
  }
  if (unfinished == 0) {
    std::printf("marathon: every branch of %s has finished; nothing to resume\n",
                run_dir.string().c_str());
    return 0;
  }
  std::unique_ptr<eval::Executor> executor;
  try {
    executor = eval::make_executor(eval::executor_from_config(state0.config));
  } catch (const std::exception& e) {
    spdlog::error("resume: {}", e.what());
    return 2;
  }
  std::printf("marathon: resuming %s, %d of %d branches unfinished\n", run_dir.string().c_str(),
              unfinished, k);
  std::fflush(stdout);
  std::vector<Branch> branches;
  for (int i = 0; i < k; ++i) {
    branches.push_back(
        {branch_dir(run_dir, i), stores[size_t(i)].get(), policies[size_t(i)].get()});
  }
  return drive_branches_and_report(branches, run_dir, quiet, executor.get());
}

int do_resume(const std::string& run_dir, bool quiet, const std::optional<double>& model_timeout,
              bool unsafe_no_sandbox, const std::string& task_dir) {
  SandboxGate gate = sandbox_gate(unsafe_no_sandbox, "resume");
  if (!gate.ok) return 2;
  if (model_timeout) {
    if (std::optional<std::string> why = model_timeout_problem(*model_timeout)) {
      spdlog::error("resume: --model-timeout: {}", *why);
      return 2;
    }
  }
  json overrides = json::object();
  if (model_timeout) overrides["model_timeout_s"] = *model_timeout;
  // Locked before anything is appended or the workspace rewritten: a second resume of a live run
  // must change nothing.
  std::optional<RunLock> lock;
  try {
    lock.emplace(RunLock::acquire(existing_run_dir(run_dir).root));
  } catch (const StoreError& e) {
    spdlog::error("resume: {}", e.what());
    return 1;
  }
  {
    // An MCP run is driven by its client: `resume` would append run.resumed and then find no
    // policy to run it with, so it is refused before anything is written.
    State before;
    try {
      auto peek = EventStore::open(existing_run_dir(run_dir).events_db().string(),
                                   EventStore::Mode::kReadOnly);
      before = load_state(*peek);
    } catch (const std::exception& e) {
      spdlog::error("resume: {}", e.what());
      return 1;
    }
    if (before.config.value("policy", "") == "mcp") {
      spdlog::error(
          "resume: {} is an MCP run, carried on by its client: run `marathon mcp --task {} "
          "--run-dir {}` again (the same command that started it); nothing was changed",
          run_dir, before.config.value("task_dir", "TASK"), run_dir);
      return 2;
    }
    // A run folder moved to another machine finds its task there (--task), the same task.
    try {
      if (std::optional<std::string> here = task_dir_here(before, task_dir)) {
        overrides["task_dir"] = *here;
      }
    } catch (const std::invalid_argument& e) {
      spdlog::error("resume: {}: {}; nothing was changed", run_dir, e.what());
      return 2;
    }
  }
  State state;
  std::unique_ptr<EventStore> store = reopen_run(run_dir, &state, overrides);
  if (branch_count(state) > 1) {
    return resume_branches(run_dir, quiet, overrides, gate, *lock, std::move(store), state);
  }
  if (!store) {
    std::printf("marathon: run %s has already finished (%s); nothing to resume\n", run_dir.c_str(),
                state.finish_reason.c_str());
    return 0;
  }
  store->set_write_guard([&lock] { lock->verify(); });
  if (std::string key_env = state.config.value("api_key_env", ""); !key_env.empty()) {
    sandbox::never_pass(key_env);
  }
  if (gate.unsandboxed) {
    store->append(make_event(events::SandboxDisabled{gate.reason, "resume"}));
  }
  std::vector<Event> events = store->read();
  const auto created = payload_of<events::RunCreated>(events.front());
  std::unique_ptr<Policy> policy;
  std::unique_ptr<EventStore> original;
  std::vector<Event> original_events;
  DriveOptions options{quiet, {}};
  std::unique_ptr<eval::Executor> executor;
  if (created.replay_of) {
    // A replay that was stopped: serve the rest of the original's responses.
    fs::path from = created.replay_of->run_dir;
    original = EventStore::open((from / "events.db").string(), EventStore::Mode::kReadOnly);
    original_events = original->read();
    policy = make_policy("replay", PolicyOptions{&state, &original_events});
    auto* replay = static_cast<ReplayPolicy*>(policy.get());
    replay->skip(state.used.model_calls);
    options.logged_result = logged_results(original_events, *original, *store);
    options.logged_remeasure = logged_remeasurements(original_events);
  } else {
    try {
      policy = make_policy(state.config.value("policy", "search"), PolicyOptions{&state, nullptr});
      // The executor the run was started with (its config), e.g. the same Ray cluster: a job
      // submitted before the stop is found there again.
      executor = eval::make_executor(eval::executor_from_config(state.config));
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return 2;
    }
    options.executor = executor.get();
  }
  std::printf("marathon: resuming %s at event %lld (%lld tool calls so far)\n", run_dir.c_str(),
              static_cast<long long>(state.last_seq),
              static_cast<long long>(state.used.tool_calls));
  std::fflush(stdout);
  return exit_code_for(drive(*store, run_dir, *policy, options));
}

}  // namespace

void register_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Start a run on a task");
  run->add_option("TASK_DIR", args->task_dir, "Task folder (with task.toml)")->required();
  run->add_option("--run-dir", args->run_dir, "Run directory (default runs/<task>-<time>)");
  run->add_option("--policy", args->policy,
                  "llm | search (default: llm with a model, else search)");
  run->add_option("--model", args->model, "PROVIDER:MODEL, e.g. openai:gpt-4o (or MARATHON_MODEL)");
  run->add_option("--base-url", args->base_url,
                  "Base URL of an OpenAI-compatible or Anthropic API");
  run->add_option("--api-key-env", args->api_key_env,
                  "Name of the environment variable holding the API key (the key is never logged)");
  add_budget_flags(run, args->budget, BudgetDefaults::kRun);
  run->add_option("--target", args->target, "Stop once a correct score reaches this");
  run->add_option("--context-window", args->context_window, "The model's context window in tokens");
  run->add_option(
      "--model-timeout", args->model_timeout,
      "Seconds one HTTP attempt of a model call may take (default 120; kept for resume)");
  run->add_option("--max-output-tokens", args->max_output_tokens,
                  "The reply's token limit (default: 8192, or less when the context window "
                  "leaves less after the prompt)");
  run->add_option("--reasoning-effort", args->reasoning_effort,
                  "OpenAI reasoning models: none | minimal | low | medium | high | xhigh | max "
                  "(sent only where the model takes the value)");
  run->add_option("--temperature", args->temperature,
                  "Sampling temperature, 0 to 2 (default: none sent; never sent to a model that "
                  "takes none, e.g. a reasoning model)");
  run->add_option("--price-in", args->price_in,
                  "The model's price in USD per million prompt tokens, over the model table "
                  "(with --price-out; needed for --max-cost on a model the table does not list)");
  run->add_option("--price-out", args->price_out,
                  "The model's price in USD per million completion tokens (with --price-in)");
  run->add_option("--thinking-budget", args->thinking_budget,
                  "Anthropic extended thinking: its token budget (>= 1024; off by default)");
  run->add_flag("--allow-no-key", args->allow_no_key,
                "Start without the provider's API key in its variable (a local server that "
                "needs none); without it a missing key refuses the run (exit 2)");
  run->add_flag("--stream", args->stream,
                "Stream replies (server-sent events); the whole reply is logged once complete");
  run->add_option("--goal-auto-pause", args->goal_auto_pause,
                  "Goal turns without progress before the goal pauses itself (0: never)");
  run->add_option("--executor", args->executor,
                  "Where evaluations run: local (default) or ray://HOST:PORT (a Ray head's "
                  "dashboard; docs/scale-out.md)");
  run->add_option("--gpus", args->gpus,
                  "local executor: evaluate on the first N GPUs of this host (default: all)");
  run->add_option("--slots", args->slots,
                  "local executor: N CPU slots (evaluations at a time; default 1 without a GPU)");
  run->add_option("--ray-worker-binary", args->ray_worker_binary,
                  "ray executor: the marathon binary on the workers (default: marathon on PATH)");
  run->add_option("--branches", args->branches,
                  "Run K agent branches on the goal at once, sharing the executor, the result "
                  "cache, findings and dead ends, and the budgets (docs/scale-out.md)");
  run->add_flag("--quiet", args->quiet, "No live progress, only the summary");
  run->add_flag("--json", args->json,
                "No live progress; the summary as one JSON object on stdout (the state as "
                "`status --json` gives it, with run_dir, outcome, reason and exit_code)");
  run->add_flag("--unsafe-no-sandbox", args->unsafe_no_sandbox, kUnsafeNoSandboxHelp);
  run->footer(
      "Examples:\n"
      "  marathon run cpu-matmul                          the built-in search, no model needed\n"
      "  marathon run tasks/kda --model openai:gpt-4o --max-hours 24 --max-cost 50\n"
      "  marathon run TASK --model vllm:Qwen/Qwen3-32B --base-url http://gpu-box:8000/v1\n"
      "  marathon run TASK --model anthropic:claude-sonnet-4-5 --branches 4 --gpus 2\n"
      "Ctrl-C stops after the evaluation in flight; `marathon resume RUN_DIR` carries on.\n"
      "Keys: OPENAI_API_KEY, ANTHROPIC_API_KEY (or --api-key-env NAME). docs/operations.md");
  run->callback([args] { exit_code = do_run(*args); });

  auto resume_dir = std::make_shared<std::string>();
  auto resume_quiet = std::make_shared<bool>(false);
  auto resume_timeout = std::make_shared<std::optional<double>>();
  auto resume_unsafe = std::make_shared<bool>(false);
  auto resume_task = std::make_shared<std::string>();
  CLI::App* resume = app.add_subcommand("resume", "Carry on a stopped run from its log");
  resume->add_option("RUN_DIR", *resume_dir, "Run directory")
      ->required()
      ->check(existing_run_dir_check());
  resume->add_flag("--quiet", *resume_quiet, "No live progress, only the summary");
  resume->add_option("--model-timeout", *resume_timeout,
                     "Seconds one HTTP attempt of a model call may take (default: the run's)");
  resume->add_flag("--unsafe-no-sandbox", *resume_unsafe, kUnsafeNoSandboxHelp);
  resume->add_option("--task", *resume_task,
                     "The task's folder on this machine, when the run folder was moved here from "
                     "another (it must hold the task the run was created with; kept for later "
                     "resumes)");
  resume->callback([resume_dir, resume_quiet, resume_timeout, resume_unsafe, resume_task] {
    exit_code =
        do_resume(*resume_dir, *resume_quiet, *resume_timeout, *resume_unsafe, *resume_task);
  });
}

}  // namespace marathon::cli
