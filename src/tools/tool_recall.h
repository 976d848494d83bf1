// `recall`: reads back what compaction took out of the prompt. The prompt shows an elided output as
// `[output elided: recall(seq=N)]`, and a reply or output cut to fit the window with a note naming
// its seq; recall(seq=N) returns that tool.finished output (the uncapped blob when the tool kept
// one) or that model.response's reply (its text and every tool call's arguments) from the log, a
// page at a time; recall(blob=SHA) a blob of the log that an output names (a profile's report).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/event.h"
#include "core/events.h"
#include "tools/tool.h"

namespace marathon {

inline constexpr size_t kRecallPageBytes = 16000;

std::unique_ptr<Tool> make_recall_tool();

// The page of a logged tool output that recall shows (pure, for tests): `full` is the output,
// `offset` where to start. Says which part it is and how to get the next one.
std::string recall_page(int64_t seq, const std::string& tool_name, const std::string& full,
                        size_t offset, size_t page_bytes = kRecallPageBytes);
// The same with the head line's description of the text given (e.g. "the model's reply").
std::string recall_page_of(int64_t seq, const std::string& what, const std::string& full,
                           size_t offset, size_t page_bytes = kRecallPageBytes);

// The same, the page's call written as `at` ("seq=12", "blob=<sha>").
std::string recall_page_at(const std::string& at, const std::string& what, const std::string& full,
                           size_t offset, size_t page_bytes = kRecallPageBytes);

// A model.response's reply as recall shows it: the text, then each tool call with its name, id
// and arguments (pure).
std::string reply_text(const events::ModelResponse& response);

}  // namespace marathon
