#include "serve/line_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace marathon::serve {

namespace {

struct Line {
  std::string_view text;  // without its newline
  bool newline = true;    // false for a last line with no newline after it
  bool operator==(const Line& o) const { return text == o.text && newline == o.newline; }
};

std::vector<Line> split(std::string_view s) {
  std::vector<Line> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos) {
      out.push_back({s.substr(start), false});
      break;
    }
    out.push_back({s.substr(start, nl - start), true});
    start = nl + 1;
  }
  return out;
}

enum class Op : char { kSame = ' ', kDel = '-', kAdd = '+' };
struct Edit {
  Op op;
  size_t a, b;  // line indices in a and b (the one that does not apply is the next line's)
};

// Edits turning a[lo_a, hi_a) into b[lo_b, hi_b): LCS by dynamic programming when small enough.
void middle(const std::vector<Line>& a, const std::vector<Line>& b, size_t lo_a, size_t hi_a,
            size_t lo_b, size_t hi_b, std::vector<Edit>& out) {
  size_t n = hi_a - lo_a, m = hi_b - lo_b;
  if (n == 0 || m == 0 || n * m > kMaxDiffCells) {
    for (size_t i = lo_a; i < hi_a; ++i) out.push_back({Op::kDel, i, lo_b});
    for (size_t j = lo_b; j < hi_b; ++j) out.push_back({Op::kAdd, hi_a, j});
    return;
  }
  // len[i][j]: LCS length of a[lo_a+i..hi_a) and b[lo_b+j..hi_b).
  std::vector<uint32_t> len((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return len[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      at(i, j) =
          a[lo_a + i] == b[lo_b + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    }
  }
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[lo_a + i] == b[lo_b + j]) {
      out.push_back({Op::kSame, lo_a + i, lo_b + j});
      ++i, ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      out.push_back({Op::kDel, lo_a + i, lo_b + j});  // removals before additions, as diff does
      ++i;
    } else {
      out.push_back({Op::kAdd, lo_a + i, lo_b + j});
      ++j;
    }
  }
}

std::string line_of(Op op, const Line& l) {
  std::string s(1, static_cast<char>(op));
  s.append(l.text);
  s += '\n';
  if (!l.newline) s += "\\ No newline at end of file\n";
  return s;
}

}  // namespace

std::string unified_diff(std::string_view a_text, std::string_view b_text,
                         const std::string& a_name, const std::string& b_name, size_t context) {
  if (a_text == b_text) return "";
  std::vector<Line> a = split(a_text), b = split(b_text);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  std::vector<Edit> edits;
  for (size_t i = 0; i < head; ++i) edits.push_back({Op::kSame, i, i});
  middle(a, b, head, a.size() - tail, head, b.size() - tail, edits);
  for (size_t k = tail; k-- > 0;) {
    edits.push_back({Op::kSame, a.size() - 1 - k, b.size() - 1 - k});
  }

  std::string out = "--- " + a_name + "\n+++ " + b_name + "\n";
  size_t k = 0;
  while (k < edits.size()) {
    while (k < edits.size() && edits[k].op == Op::kSame) ++k;
    if (k == edits.size()) break;
    // A hunk: from `context` lines before this change to `context` lines after the last change
    // that is closer than 2 * context lines to the one before it.
    size_t start = k >= context ? k - context : 0;
    while (start < k && edits[start].op != Op::kSame) ++start;
    size_t end = k;
    size_t last_change = k;
    while (end < edits.size()) {
      if (edits[end].op != Op::kSame) last_change = end;
      if (end - last_change > 2 * context) break;
      ++end;
    }
    end = std::min(edits.size(), last_change + 1 + context);
    size_t a_start = edits[start].a, b_start = edits[start].b, a_n = 0, b_n = 0;
    std::string body;
    for (size_t i = start; i < end; ++i) {
      const Edit& e = edits[i];
      if (e.op != Op::kAdd) ++a_n;
      if (e.op != Op::kDel) ++b_n;
      body += line_of(e.op, e.op == Op::kAdd ? b[e.b] : a[e.a]);
    }
    // Line numbers are 1-based; an empty range names the line before it.
    out += fmt::format("@@ -{},{} +{},{} @@\n", a_n ? a_start + 1 : a_start, a_n,
                       b_n ? b_start + 1 : b_start, b_n);
    out += body;
    k = end;
  }
  return out;
}

}  // namespace marathon::serve
