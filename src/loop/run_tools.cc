#include "loop/run_tools.h"

#include "tools/tool_evaluate.h"
#include "tools/tool_finish.h"
#include "tools/tool_note.h"
#include "tools/tool_profile.h"
#include "tools/tool_recall.h"
#include "tools/tool_revert.h"
#include "tools/workspace_tools.h"

namespace marathon {

ToolRegistry make_run_tools(const State* state) {
  ToolRegistry tools;
  RunToolOptions run;
  run.gpu = state && state->task.value("needs_gpu", false);
  for (std::unique_ptr<Tool>& t : make_workspace_tools(run)) tools.add(std::move(t));
  tools.add(make_evaluate_tool());
  tools.add(make_profile_tool());
  tools.add(make_note_tool());
  tools.add(make_recall_tool());
  tools.add(make_revert_tool());
  tools.add(make_finish_tool());
  return tools;
}

}  // namespace marathon
