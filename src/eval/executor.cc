#include "eval/executor.h"

#include <fmt/format.h>

#include <cctype>
#include <stdexcept>

#include "eval/local_executor.h"
#include "eval/ray_executor.h"

namespace marathon::eval {

std::string ExecutorSpec::to_string() const {
  if (kind == ExecutorKind::kRay) return fmt::format("ray://{}:{}", host, port);
  return "local";
}

json ExecutorSpec::to_json() const {
  json j = {{"kind", kind == ExecutorKind::kRay ? "ray" : "local"}};
  if (kind == ExecutorKind::kRay) {
    j["address"] = to_string();
    j["worker_binary"] = worker_binary;
  } else {
    j["slots"] = slots;
    j["gpus"] = gpus;
  }
  return j;
}

std::optional<ExecutorSpec> parse_executor(const std::string& text, std::string* error) {
  ExecutorSpec spec;
  if (text.empty() || text == "local") return spec;
  const std::string prefix = "ray://";
  if (text.rfind(prefix, 0) != 0) {
    *error = fmt::format("\"{}\": an executor is `local` or `ray://HOST:PORT`", text);
    return std::nullopt;
  }
  std::string rest = text.substr(prefix.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    *error = fmt::format(
        "\"{}\": expected ray://HOST:PORT (PORT: the dashboard's, 8265 by default)", text);
    return std::nullopt;
  }
  std::string host = rest.substr(0, colon);
  std::string port = rest.substr(colon + 1);
  for (char c : host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) {
      *error =
          fmt::format("\"{}\": the host may hold letters, digits, '.', '-' and '_' only", text);
      return std::nullopt;
    }
  }
  int p = 0;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || p > 65535) {
      *error = fmt::format("\"{}\": the port is not a number from 1 to 65535", text);
      return std::nullopt;
    }
    p = p * 10 + (c - '0');
  }
  if (p < 1 || p > 65535) {
    *error = fmt::format("\"{}\": the port is not a number from 1 to 65535", text);
    return std::nullopt;
  }
  spec.kind = ExecutorKind::kRay;
  spec.host = host;
  spec.port = p;
  return spec;
}

ExecutorSpec executor_from_config(const json& config) {
  ExecutorSpec spec;
  auto it = config.find("executor");
  if (it == config.end() || !it->is_object()) return spec;
  const json& e = *it;
  if (e.value("kind", "local") == "ray") {
    std::string error;
    if (std::optional<ExecutorSpec> r = parse_executor(e.value("address", ""), &error)) spec = *r;
    spec.worker_binary = e.value("worker_binary", "marathon");
  } else {
    spec.slots = e.value("slots", 0);
    spec.gpus = e.value("gpus", false);
  }
  return spec;
}

std::unique_ptr<Executor> make_executor(const ExecutorSpec& spec) {
  if (spec.kind == ExecutorKind::kRay) return std::make_unique<RayExecutor>(spec);
  return std::make_unique<LocalExecutor>(slot_names(spec, detect_gpu_ids()));
}

}  // namespace marathon::eval
