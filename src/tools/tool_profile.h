// `profile`: the task's evaluator with profiling asked for (env MARATHON_PROFILE=1); for GPU tasks
// harness/ runs the candidate and the task's baseline under Nsight Compute inside the evaluate
// sandbox and answers with a compact side-by-side view (`profile`, at most ~2 KB) and the whole
// report (`profile_report`). The model sees the view and a pointer to the whole report, kept as a
// blob (ToolResult.full_output_sha: recall(blob=SHA) or recall(seq=N) pages through it), whose
// first line names the profile's key (candidate hash, task, evaluator version, device). Profiles
// are evaluations' siblings in the log: a profile of a candidate already profiled on this device
// is served from the log's earlier tool.finished, never run twice. A GPU task on a machine without
// a GPU gets a clear message instead. No evaluation is recorded (the numbers are not a score).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/event.h"
#include "tools/tool.h"

namespace marathon {

std::unique_ptr<Tool> make_profile_tool();

inline constexpr const char* kProfileKeyLine = "profile key: ";

// Pure: the key of a profile, from the evaluation cache key of the same candidate and device.
std::string profile_key(const std::string& cache_key);
// Pure: the blob kept for a profile: its key line, then the whole report.
std::string profile_blob(const std::string& key, const std::string& report);

struct LoggedProfile {
  int64_t seq = 0;       // its tool.finished
  std::string output;    // what the model saw
  std::string blob_sha;  // the whole report
};

// Pure but for `blob` (sha -> bytes): the latest successful profile with this key among `events`.
std::optional<LoggedProfile> find_logged_profile(
    const std::vector<Event>& events, const std::string& key,
    const std::function<std::optional<std::string>(const std::string&)>& blob);

// Pure: the text the model gets from the evaluator's answer to a profile request: the view's
// lines (or the log, where the profile did not run), then the candidate, the device and where
// the whole report is.
std::string profile_view(const json& result, const std::string& candidate,
                         const std::string& device, const std::string& blob_sha,
                         size_t report_bytes);

}  // namespace marathon
