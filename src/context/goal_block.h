// The goal block: rebuilt from state for every request and never compacted. Objective, metric and
// target, baseline, best so far (and which candidate), budget used and left, evaluations since the
// last improvement, goal status. Pure and deterministic (numbers printed with fixed precision).
#pragma once

#include <string>

#include "core/state.h"

namespace marathon::context {

inline constexpr const char* kGoalBlockHeading =
    "## Goal (pinned: rebuilt from the run state every turn)";

std::string render_goal_block(const State& state);

// Shortens a candidate hash for display (first 12 hex digits).
std::string short_hash(const std::string& hash);

// A number printed the same way everywhere in a prompt: up to 4 significant decimals, no trailing
// zeros, no locale.
std::string fmt_number(double v);

}  // namespace marathon::context
