// Policies by name: llm | search | replay. An unknown name is an error that lists the valid ones.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/state.h"
#include "policy/policy.h"

namespace marathon {

struct PolicyOptions {
  // The run: config.model ("PROVIDER:MODEL"), config.base_url, config.api_key_env and the task
  // (prices, knobs) are read from here.
  const State* state = nullptr;
  // replay: the logged run whose model responses are served.
  const std::vector<Event>* replay_events = nullptr;
};

const std::vector<std::string>& policy_names();

// One HTTP attempt of a model call when the run sets no `model_timeout_s` (`--model-timeout`).
inline constexpr double kDefaultModelTimeoutS = 120;

// The run config's model_timeout_s when it is a positive number, else kDefaultModelTimeoutS.
double model_timeout_s(const json& config);

// Throws std::invalid_argument naming the policy and the valid names, or saying what the chosen
// policy lacks (e.g. llm without a model).
std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyOptions& options);

}  // namespace marathon
