// wordfreq [N]: reads a text on standard input and prints its N most frequent words (default 10;
// 0: all), one per line as "count word", then a line with the number of words and of distinct
// words.
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include "wordfreq.h"

int main(int argc, char** argv) {
  size_t top = 10;
  if (argc > 2) {
    std::cerr << "usage: wordfreq [N]\n";
    return 2;
  }
  if (argc == 2) {
    std::istringstream in(argv[1]);
    long n = -1;
    if (!(in >> n) || n < 0 || !in.eof()) {
      std::cerr << "wordfreq: N must be a number >= 0, got " << argv[1] << "\n";
      return 2;
    }
    top = static_cast<size_t>(n);
  }
  std::ostringstream text;
  text << std::cin.rdbuf();
  std::vector<std::string> words = wordfreq::split_words(text.str());
  auto ranked = wordfreq::most_frequent(words, 0);
  size_t distinct = ranked.size();
  if (top != 0 && ranked.size() > top) ranked.resize(top);
  for (const auto& [word, count] : ranked) {
    std::cout << std::setw(7) << count << ' ' << word << '\n';
  }
  std::cout << words.size() << " words, " << distinct << " distinct\n";
  return 0;
}
