// `recall`: reads back a tool output that compaction elided from the prompt. The prompt shows an
// elided output as `[output elided: recall(seq=N)]`; recall(seq=N) returns that tool.finished
// output from the log (the uncapped blob when the tool kept one), a page at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/event.h"
#include "tools/tool.h"

namespace marathon {

inline constexpr size_t kRecallPageBytes = 16000;

std::unique_ptr<Tool> make_recall_tool();

// The page of a logged tool output that recall shows (pure, for tests): `full` is the output,
// `offset` where to start. Says which part it is and how to get the next one.
std::string recall_page(int64_t seq, const std::string& tool_name, const std::string& full,
                        size_t offset, size_t page_bytes = kRecallPageBytes);

}  // namespace marathon
