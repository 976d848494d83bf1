// Retry timing for HTTP calls: which statuses are worth another attempt, how long to wait
// (exponential backoff with jitter), and what the server's Retry-After asks for. Pure functions.
#pragma once

#include <ctime>
#include <map>
#include <optional>
#include <string>

namespace marathon::llm {

// 408, 409, 425, 429, 5xx (incl. Anthropic's 529 "overloaded"): the same request may succeed later.
bool is_retryable_status(int status);

// Whether an attempt that ended with `status` (0: no complete response) is worth another, as both
// official SDKs decide it: the server's `x-should-retry: true` or `false` wins; otherwise a
// transport failure and is_retryable_status are retried. Headers are keyed lower-case.
bool should_retry(int status, const std::map<std::string, std::string>& headers);

// Seconds the server asks us to wait, from `retry-after-ms` or `retry-after` (delta-seconds or an
// HTTP-date, relative to `now`). Headers are keyed lower-case. nullopt when absent or unparsable.
std::optional<double> retry_after_s(const std::map<std::string, std::string>& headers,
                                    std::time_t now);

// Backoff before retry number `retry` (0-based): base * 2^retry capped at max_s, then "equal
// jitter": half of it fixed plus `jitter01` (in [0,1)) times the other half.
double backoff_s(int retry, double base_s, double max_s, double jitter01);

// The wait before the next attempt: the server's Retry-After when given (clamped to
// retry_after_max_s, and never less than 0), else backoff_s.
double retry_delay_s(int retry, const std::map<std::string, std::string>& headers, std::time_t now,
                     double base_s, double max_s, double retry_after_max_s, double jitter01);

}  // namespace marathon::llm
