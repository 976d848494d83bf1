// Where Nsight Compute lives on the host, so that the evaluate profile can bind it read-only: a
// `profile` runs the candidate under ncu inside the sandbox, and both ncu itself and CUDA's `ncu`
// wrapper (bin/ncu of a toolkit, which looks for an nsight-compute folder beside the toolkit or
// under /opt/nvidia) need its install folder, which sits outside the system folders the sandbox
// shows (/opt).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace marathon::sandbox {

// The Nsight Compute install folders found by a probe (each holds an `ncu` and its `sections/` or
// `target/` folder): the folder of ncu as PATH finds it (links followed), every
// `<opt_root>/*/`, and `$CUDA_HOME/nsight-compute*/`. In that order, without repeats; none when
// there is no Nsight Compute. `path_var` and `cuda_home` are the runner's PATH and CUDA_HOME.
std::vector<std::filesystem::path> nsight_compute_dirs(
    const std::string& path_var, const std::string& cuda_home,
    const std::filesystem::path& opt_root = "/opt/nvidia/nsight-compute");

}  // namespace marathon::sandbox
