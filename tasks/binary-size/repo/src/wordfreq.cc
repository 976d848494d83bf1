#include "wordfreq.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace wordfreq {

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::string w;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool inner_apostrophe =
        c == '\'' && !w.empty() && i + 1 < text.size() && word_char(text[i + 1]);
    if (word_char(c) || inner_apostrophe) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!w.empty()) {
      out.push_back(w);
      w.clear();
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

std::vector<std::pair<std::string, long>> most_frequent(const std::vector<std::string>& words,
                                                        size_t top) {
  std::map<std::string, long> counts;
  for (const std::string& w : words) ++counts[w];
  std::vector<std::pair<std::string, long>> ranked(counts.begin(), counts.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (top != 0 && ranked.size() > top) ranked.resize(top);
  return ranked;
}

}  // namespace wordfreq
