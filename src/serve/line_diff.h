// A unified diff of two texts, line by line (the candidate diffs of the dashboard and the report).
// Pure. The lines between the common head and tail are matched by longest common subsequence when
// that block is at most kMaxDiffCells lines by lines, else shown as all removed then all added:
// the cost stays bounded whatever a candidate holds.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace marathon::serve {

inline constexpr size_t kMaxDiffCells = 4'000'000;

// "" when the texts are equal; else "--- a_name\n+++ b_name\n" and "@@ -l,n +l,n @@" hunks with
// `context` lines around each change. A text that does not end in a newline gets the usual
// "\ No newline at end of file" line.
std::string unified_diff(std::string_view a, std::string_view b, const std::string& a_name,
                         const std::string& b_name, size_t context = 3);

}  // namespace marathon::serve
