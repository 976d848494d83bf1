// Knobs: the tunable constants a task's files declare with `marathon:knob [v1, v2, ...]`
// (the format: docs/tasks.md, "Tunable knobs"). Pure text functions.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace marathon {

// A knob line that cannot be read. what() reads "<path>:<line>: <problem>".
class KnobError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Knob {
  std::string name;
  std::string path;                 // the file that declares it
  int line = 0;                     // 1-based
  std::vector<std::string> values;  // the allowed values, as written
  std::string current;              // the value text in the file
  // The starting index into `values`: the current value's, or the middle of the list when the
  // current value is not one of them.
  int start_index() const;
};

// The knobs declared in one file, in line order. Throws KnobError for a marker without a
// bracketed non-empty list, or a marker line without `NAME = value`.
std::vector<Knob> parse_knobs(const std::string& path, const std::string& text);

// The knobs of several files (path -> text), in path then line order. Throws KnobError when a name
// is declared twice.
std::vector<Knob> parse_knobs(const std::map<std::string, std::string>& files);

// `text` (the file at `path`) with each knob of that file set to values[name]; every other byte is
// kept. Knobs without an entry in `values` keep their text.
std::string set_knobs(const std::string& path, const std::string& text,
                      const std::map<std::string, std::string>& values);

// "BLOCK=64 UNROLL=4": knobs in the given order.
std::string config_text(const std::vector<Knob>& knobs, const std::vector<int>& config);

// The inverse of config_text: the index of each knob's value, if `text` names every knob with an
// allowed value (tokens may come in any order; other words are ignored).
std::optional<std::vector<int>> parse_config_text(const std::vector<Knob>& knobs,
                                                  const std::string& text);

}  // namespace marathon
