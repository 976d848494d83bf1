// The environment a sandboxed process gets: built from scratch, never inherited. A few variables
// are always set (PATH, HOME, TMPDIR, LANG); a short allow-list passes through from the runner's
// environment; every name that looks like a credential is refused, whatever list it came from.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace marathon::sandbox {

using EnvMap = std::map<std::string, std::string>;

// True for a name that may hold a credential: it contains KEY, TOKEN, SECRET, PASSWORD, PASSWD,
// CREDENTIAL or AUTH (case-insensitive), or it is in `never` (e.g. the variable a run was told to
// read its API key from, whatever its name).
bool secret_name(const std::string& name, const std::set<std::string>& never = {});

// True for a name the allow-list passes through: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
// CUDA_HOME, NVIDIA_VISIBLE_DEVICES, TRITON_*, MARATHON_*, CC, CXX, PYTHONPATH, VIRTUAL_ENV,
// OMP_NUM_THREADS, TZ, and LD_LIBRARY_PATH / LIBRARY_PATH (GPU containers often find libcuda
// there) (secret names excluded).
bool passes_through(const std::string& name, const std::set<std::string>& never = {});

// Pure: the whole environment of a sandboxed process. `host` is the runner's environment, `fixed`
// what the launcher sets (PATH, HOME, TMPDIR, ...; set as given), `extra` what the caller adds
// (e.g. MARATHON_CANDIDATE_DIR; a secret name there is dropped like any other).
EnvMap sandbox_environment(const EnvMap& host, const EnvMap& fixed, const EnvMap& extra,
                           const std::set<std::string>& never = {});

// The runner's own environment as a map.
EnvMap host_environment();

// "NAME=value" strings for execve.
std::vector<std::string> envp_strings(const EnvMap& env);

}  // namespace marathon::sandbox
