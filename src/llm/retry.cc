#include "llm/retry.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>

namespace marathon::llm {

bool is_retryable_status(int status) {
  return status == 408 || status == 409 || status == 425 || status == 429 ||
         (status >= 500 && status <= 599);
}

bool should_retry(int status, const std::map<std::string, std::string>& headers) {
  if (auto it = headers.find("x-should-retry"); it != headers.end()) {
    if (it->second == "true") return true;
    if (it->second == "false") return false;
  }
  return status == 0 || is_retryable_status(status);
}

namespace {

std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<double> retry_after_s(const std::map<std::string, std::string>& headers,
                                    std::time_t now) {
  if (auto it = headers.find("retry-after-ms"); it != headers.end()) {
    if (auto ms = parse_number(it->second)) return std::max(0.0, *ms / 1000.0);
  }
  auto it = headers.find("retry-after");
  if (it == headers.end()) return std::nullopt;
  if (auto s = parse_number(it->second)) return std::max(0.0, *s);
  std::tm tm{};  // HTTP-date, e.g. "Wed, 21 Oct 2015 07:28:00 GMT"
  const char* end = strptime(it->second.c_str(), "%a, %d %b %Y %H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  std::time_t at = timegm(&tm);
  return std::max(0.0, std::difftime(at, now));
}

double backoff_s(int retry, double base_s, double max_s, double jitter01) {
  double cap = std::min(max_s, base_s * std::pow(2.0, std::min(retry, 30)));
  jitter01 = std::clamp(jitter01, 0.0, 1.0);
  return cap / 2 + jitter01 * cap / 2;
}

double retry_delay_s(int retry, const std::map<std::string, std::string>& headers, std::time_t now,
                     double base_s, double max_s, double retry_after_max_s, double jitter01) {
  if (auto server = retry_after_s(headers, now)) return std::min(*server, retry_after_max_s);
  return backoff_s(retry, base_s, max_s, jitter01);
}

}  // namespace marathon::llm
