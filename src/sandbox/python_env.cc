#include "sandbox/python_env.h"

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "sandbox/environment.h"
#include "sandbox/launcher.h"

namespace marathon::sandbox {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kPythonQuery =
    "import json, sys; print(json.dumps({'executable': sys.executable, 'prefix': sys.prefix, "
    "'base_prefix': sys.base_prefix, 'path': sys.path}))";

}  // namespace

PythonEnv parse_python_query(const std::string& text) {
  PythonEnv env;
  size_t start = text.rfind('{');
  // The answer nests two levels ({..., "path": [...]}); anything deeper is dropped while it is read
  // (sandbox links no core, so not core/json_reader.h), a number out of range makes it no answer.
  const json::parser_callback_t shallow = [](int depth, json::parse_event_t event, json&) {
    return depth < 2 || (event != json::parse_event_t::object_start &&
                         event != json::parse_event_t::array_start);
  };
  json j = start == std::string::npos ? json() : json::parse(text.substr(start), shallow, false);
  if (!j.is_object() || !j.contains("executable") || !j["executable"].is_string() ||
      j["executable"].get<std::string>().empty()) {
    env.error = "the interpreter printed no answer to the query";
    return env;
  }
  env.executable = j["executable"].get<std::string>();
  auto add = [&](const json& v) {
    if (!v.is_string()) return;
    fs::path p = v.get<std::string>();
    if (!p.is_absolute()) return;
    p = p.lexically_normal();
    for (const fs::path& d : env.dirs) {
      std::string ds = d.string(), ps = p.string();
      if (ps == ds || (ps.rfind(ds + "/", 0) == 0)) return;  // already inside a bound folder
    }
    env.dirs.push_back(p);
  };
  add(j.value("prefix", json()));
  add(j.value("base_prefix", json()));
  for (const json& p : j.value("path", json::array())) add(p);
  // The executable's own folder (a symlinked venv python resolves into base_prefix).
  add(json(fs::path(env.executable).parent_path().string()));
  return env;
}

const PythonEnv& python_env(const std::string& python) {
  static std::mutex mu;
  static std::map<std::string, PythonEnv> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(python); it != cache.end()) return it->second;
  LaunchSpec spec;
  spec.isolation = Isolation::kNone;
  spec.profile = Profile::kHostTool;
  spec.argv = {python, "-I", "-c", kPythonQuery};
  EnvMap host = host_environment();
  spec.env = host;  // secret names are dropped by the launcher
  spec.timeout_s = 30;
  LaunchResult r = launch(spec);
  PythonEnv env;
  if (!r.started) {
    env.error = r.setup_error;
  } else if (r.timed_out || r.exit_code != 0) {
    env.error = "`" + python + " -I -c ...` failed (exit " + std::to_string(r.exit_code) +
                "): " + r.err.substr(0, 400);
  } else {
    env = parse_python_query(r.out);
  }
  return cache.emplace(python, std::move(env)).first->second;
}

}  // namespace marathon::sandbox
