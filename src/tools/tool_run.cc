#include "tools/tool_run.h"

#include <cstdio>

#include "eval/evaluator.h"
#include "tools/tool_error.h"

namespace marathon {

std::string cap_output(const std::string& output, size_t total_bytes, size_t cap,
                       const std::string& blob_sha, bool blob_whole) {
  if (total_bytes <= cap && output.size() == total_bytes) return output;
  size_t half = cap / 2;
  std::string head = output.substr(0, std::min(half, output.size()));
  std::string tail = output.size() > half
                         ? output.substr(output.size() - std::min(half, output.size() - half))
                         : "";
  size_t shown = head.size() + tail.size();
  size_t elided = total_bytes > shown ? total_bytes - shown : 0;
  std::string note = "\n[... " + std::to_string(elided) + " of " + std::to_string(total_bytes) +
                     " bytes not shown";
  if (!blob_sha.empty()) {
    note += blob_whole ? "; full output kept as blob " + blob_sha
                       : "; its head and tail kept as blob " + blob_sha;
  }
  note += " ...]\n";
  return head + note + tail;
}

namespace {

class RunTool : public Tool {
 public:
  explicit RunTool(RunToolOptions o) : o_(o) {}
  std::string name() const override { return "run"; }
  std::string description() const override {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "Run a shell command (/bin/sh -c) in the workspace, in a sandbox: no network, "
                  "only the workspace and a private /tmp are writable. Killed with its children "
                  "after timeout_s (default %.0f s, at most %.0f s). Output (stdout and stderr) is "
                  "capped to %zu bytes, head and tail.",
                  o_.default_timeout_s, o_.max_timeout_s, o_.output_cap);
    return buf;
  }
  json parameters() const override {
    return {{"type", "object"},
            {"properties",
             {{"command", {{"type", "string"}, {"minLength", 1}}},
              {"timeout_s", {{"type", "number"}, {"minimum", 1}, {"maximum", o_.max_timeout_s}}}}},
            {"required", {"command"}},
            {"additionalProperties", false}};
  }

  ToolResult run(const json& args, ToolContext& ctx) override {
    sandbox::LaunchSpec so;
    so.profile = sandbox::Profile::kRun;
    if (o_.isolation) so.isolation = *o_.isolation;
    so.argv = {"/bin/sh", "-c", args["command"].get<std::string>()};
    so.writable = {ctx.workspace};
    so.cwd = ctx.workspace;
    so.python = eval::default_python();
    so.gpu = o_.gpu;
    so.bwrap = o_.bwrap;
    so.timeout_s = args.value("timeout_s", o_.default_timeout_s);
    so.merge_stderr = true;
    so.out_head = o_.stored_head;
    so.out_tail = o_.stored_tail;
    sandbox::LaunchResult s = sandbox::launch(so);
    if (!s.started) return tool_error("run: " + s.setup_error);
    ToolResult r;
    bool capped = s.out_bytes > o_.output_cap;
    if (capped && ctx.put_blob) r.full_output_sha = ctx.put_blob(s.out);
    std::string status;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f s", s.elapsed_s);
    if (s.timed_out) {
      char t[32];
      std::snprintf(t, sizeof t, "%.0f", so.timeout_s);
      status =
          std::string("timed out after ") + t + " s; the command and all its processes were killed";
      r.ok = false;
    } else if (s.signal != 0) {
      status = "killed by signal " + std::to_string(s.signal) + " after " + secs;
      r.ok = false;
    } else {
      status = "exit code " + std::to_string(s.exit_code) + " after " + secs;
      r.ok = s.exit_code == 0;
    }
    r.output = status + "\n" +
               cap_output(s.out, s.out_bytes, o_.output_cap, r.full_output_sha, !s.out_truncated);
    return r;
  }

 private:
  RunToolOptions o_;
};

}  // namespace

std::unique_ptr<Tool> make_run_tool(RunToolOptions options) {
  return std::make_unique<RunTool>(options);
}

}  // namespace marathon
