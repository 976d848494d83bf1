// Word frequencies of a text: the words (letters and digits, lower-cased; an apostrophe inside a
// word is kept) and how often each occurs.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace wordfreq {

// Every word of `text`, in order.
std::vector<std::string> split_words(const std::string& text);

// The `top` most frequent words with their counts, most frequent first, ties in alphabetical
// order. top == 0 means all of them.
std::vector<std::pair<std::string, long>> most_frequent(const std::vector<std::string>& words,
                                                        size_t top);

}  // namespace wordfreq
