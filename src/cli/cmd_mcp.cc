// marathon mcp --task TASK_DIR [--run-dir D] [--unsafe-no-sandbox]: the harness as a Model Context
// Protocol server on stdin/stdout, for an agent the user already has (docs/mcp.md). Logs go to
// stderr; stdout carries only the protocol.
#include <memory>

#include "cli/commands.h"
#include "mcp/mcp_server.h"

namespace marathon::cli {
namespace {

struct McpArgs {
  std::string task_dir;
  std::string run_dir;
  bool unsafe_no_sandbox = false;
};

int do_mcp(const McpArgs& a) {
  SandboxGate gate = sandbox_gate(a.unsafe_no_sandbox, "mcp");
  if (!gate.ok) return 2;
  mcp::McpOptions o;
  o.harness.task_dir = a.task_dir;
  o.harness.run_dir = a.run_dir;
  if (gate.unsandboxed) o.harness.sandbox_disabled = gate.reason;
  return mcp::serve_mcp(o);
}

}  // namespace

void register_mcp(CLI::App& app) {
  auto a = std::make_shared<McpArgs>();
  CLI::App* sub = app.add_subcommand(
      "mcp", "Serve the harness for a task to an MCP client (Model Context Protocol over stdio)");
  sub->add_option("--task", a->task_dir, "Task folder (with task.toml)")->required();
  sub->add_option("--run-dir", a->run_dir,
                  "Run directory: a new one is created, an existing run of the task carried on "
                  "(default runs/<task>-mcp-<time>)");
  sub->add_flag("--unsafe-no-sandbox", a->unsafe_no_sandbox, kUnsafeNoSandboxHelp);
  sub->footer(
      "Examples:\n"
      "  marathon mcp --task tasks/cpu-matmul --run-dir runs/mm-agent\n"
      "  claude mcp add marathon -- marathon mcp --task /abs/tasks/cpu-matmul --run-dir "
      "/abs/runs/mm\n"
      "stdout carries only the protocol; logs go to stderr. The same command on the same "
      "--run-dir carries a paused MCP run on (not `marathon resume`). docs/mcp.md");
  sub->callback([a] { exit_code = do_mcp(*a); });
}

}  // namespace marathon::cli
