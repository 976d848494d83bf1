#include "sandbox/environment.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

extern char** environ;

namespace marathon::sandbox {

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

}  // namespace

bool secret_name(const std::string& name, const std::set<std::string>& never) {
  if (never.count(name)) return true;
  static constexpr std::array<std::string_view, 7> kMarks = {
      "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"};
  std::string u = upper(name);
  return std::any_of(kMarks.begin(), kMarks.end(),
                     [&](std::string_view m) { return u.find(m) != std::string::npos; });
}

bool passes_through(const std::string& name, const std::set<std::string>& never) {
  if (secret_name(name, never)) return false;
  static const std::set<std::string> kNames = {"CUDA_VISIBLE_DEVICES",
                                               "CUDA_DEVICE_ORDER",
                                               "CUDA_HOME",
                                               "NVIDIA_VISIBLE_DEVICES",
                                               "CC",
                                               "CXX",
                                               "PYTHONPATH",
                                               "VIRTUAL_ENV",
                                               "OMP_NUM_THREADS",
                                               "TZ",
                                               "LD_LIBRARY_PATH",
                                               "LIBRARY_PATH"};
  return kNames.count(name) || starts_with(name, "MARATHON_") || starts_with(name, "TRITON_");
}

EnvMap sandbox_environment(const EnvMap& host, const EnvMap& fixed, const EnvMap& extra,
                           const std::set<std::string>& never) {
  EnvMap env;
  for (const auto& [k, v] : host) {
    if (passes_through(k, never)) env[k] = v;
  }
  for (const auto& [k, v] : extra) {
    if (!secret_name(k, never)) env[k] = v;
  }
  for (const auto& [k, v] : fixed) env[k] = v;
  return env;
}

EnvMap host_environment() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

std::vector<std::string> envp_strings(const EnvMap& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace marathon::sandbox
