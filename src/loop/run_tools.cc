#include "loop/run_tools.h"

#include "tools/tool_evaluate.h"
#include "tools/tool_finish.h"
#include "tools/tool_note.h"
#include "tools/tool_profile.h"
#include "tools/tool_revert.h"

namespace marathon {

ToolSet make_run_tools() {
  ToolSet tools;
  tools.add(make_evaluate_tool());
  tools.add(make_profile_tool());
  tools.add(make_note_tool());
  tools.add(make_revert_tool());
  tools.add(make_finish_tool());
  return tools;
}

}  // namespace marathon
