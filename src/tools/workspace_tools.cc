#include "tools/workspace_tools.h"

#include "tools/tool_edit_file.h"
#include "tools/tool_grep.h"
#include "tools/tool_list_files.h"
#include "tools/tool_read_file.h"
#include "tools/tool_write_file.h"

namespace marathon {

std::vector<std::unique_ptr<Tool>> make_workspace_tools(RunToolOptions run_options) {
  std::vector<std::unique_ptr<Tool>> tools;
  tools.push_back(make_read_file_tool());
  tools.push_back(make_write_file_tool());
  tools.push_back(make_edit_file_tool());
  tools.push_back(make_list_files_tool());
  tools.push_back(make_grep_tool());
  tools.push_back(make_run_tool(run_options));
  return tools;
}

}  // namespace marathon
