#include "llm/usage_check.h"

#include <cmath>

namespace marathon::llm {

int64_t read_usage_count(const json& usage, const char* key, std::vector<std::string>* problems) {
  if (!usage.is_object()) return 0;
  auto it = usage.find(key);
  if (it == usage.end() || it->is_null()) return 0;
  const json& v = *it;
  const std::string where = std::string("usage.") + key + " = " + v.dump();
  auto reject = [&](const std::string& why) {
    problems->push_back(where + ": " + why);
    return int64_t{0};
  };
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u >= static_cast<uint64_t>(kMaxUsageTokensPerCall)) {
      return reject("not below " + std::to_string(kMaxUsageTokensPerCall) + " per call");
    }
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < 0) return reject("negative");
    if (i >= kMaxUsageTokensPerCall) {
      return reject("not below " + std::to_string(kMaxUsageTokensPerCall) + " per call");
    }
    return i;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d)) return reject("not a finite number");
    if (d < 0) return reject("negative");
    if (d >= static_cast<double>(kMaxUsageTokensPerCall)) {
      return reject("not below " + std::to_string(kMaxUsageTokensPerCall) + " per call");
    }
    if (d != std::floor(d)) return reject("not a whole number");
    return static_cast<int64_t>(d);
  }
  return reject(std::string("not a number (") + v.type_name() + ")");
}

void check_usage_total(int64_t value, const std::string& what, std::vector<std::string>* problems) {
  if (value < 0) {
    problems->push_back(what + " = " + std::to_string(value) + ": negative");
  } else if (value >= kMaxUsageTokensPerCall) {
    problems->push_back(what + " = " + std::to_string(value) + ": not below " +
                        std::to_string(kMaxUsageTokensPerCall) + " per call");
  }
}

}  // namespace marathon::llm
