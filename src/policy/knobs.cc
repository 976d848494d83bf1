#include "policy/knobs.h"

#include <fmt/format.h>

#include <regex>
#include <set>
#include <sstream>

namespace marathon {

namespace {

constexpr const char* kMarker = "marathon:knob";

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

struct ValueSpan {
  size_t begin = 0, end = 0;  // [begin, end) of the value text in the line
};

// The knob on one line, or nullopt when the line has no marker. `span` gets where the value is.
std::optional<Knob> parse_line(const std::string& path, int lineno, const std::string& line,
                               ValueSpan* span) {
  size_t marker = line.find(kMarker);
  if (marker == std::string::npos) return std::nullopt;
  auto fail = [&](const std::string& why) {
    return KnobError(fmt::format("{}:{}: {}", path, lineno, why));
  };
  size_t open = line.find('[', marker);
  size_t close = open == std::string::npos ? open : line.find(']', open);
  if (close == std::string::npos) {
    throw fail("marathon:knob needs a bracketed list of values, e.g. [16, 32, 64]");
  }
  Knob k;
  k.path = path;
  k.line = lineno;
  std::stringstream list(line.substr(open + 1, close - open - 1));
  for (std::string v; std::getline(list, v, ',');) {
    v = trim(v);
    if (v.empty()) throw fail("empty value in the knob's list");
    k.values.push_back(v);
  }
  if (k.values.empty()) throw fail("the knob's list of values is empty");

  size_t eq = line.find('=');
  if (eq == std::string::npos || eq > marker) {
    throw fail("a knob line must read NAME = value before the marker");
  }
  // NAME is the identifier before '=' (or before ':' in a Python annotation `NAME: int = 4`).
  static const std::regex kAnnotated(R"(^\s*([A-Za-z_]\w*)\s*:(?!:).*$)");
  static const std::regex kLastIdent(R"(([A-Za-z_]\w*)\s*$)");
  std::string lhs = line.substr(0, eq);
  std::smatch m;
  if (std::regex_match(lhs, m, kAnnotated) || std::regex_search(lhs, m, kLastIdent)) {
    k.name = m[1];
  } else {
    throw fail("no knob name before '='");
  }
  // The value runs to the first ';', '#' or "//" after '='.
  size_t end = line.size();
  for (const char* stop : {";", "#", "//"}) {
    size_t p = line.find(stop, eq + 1);
    if (p != std::string::npos) end = std::min(end, p);
  }
  size_t vb = line.find_first_not_of(" \t", eq + 1);
  if (vb == std::string::npos || vb >= end) throw fail("knob " + k.name + " has no value");
  size_t ve = line.find_last_not_of(" \t", end - 1) + 1;
  k.current = line.substr(vb, ve - vb);
  if (span) *span = {vb, ve};
  return k;
}

}  // namespace

int Knob::start_index() const {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == current) return static_cast<int>(i);
  }
  return static_cast<int>(values.size() / 2);
}

std::vector<Knob> parse_knobs(const std::string& path, const std::string& text) {
  std::vector<Knob> out;
  std::vector<std::string> lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (auto k = parse_line(path, static_cast<int>(i + 1), lines[i], nullptr)) out.push_back(*k);
  }
  return out;
}

std::vector<Knob> parse_knobs(const std::map<std::string, std::string>& files) {
  std::vector<Knob> out;
  for (const auto& [path, text] : files) {
    for (Knob& k : parse_knobs(path, text)) out.push_back(std::move(k));
  }
  std::set<std::string> seen;
  for (const Knob& k : out) {
    if (!seen.insert(k.name).second) {
      throw KnobError(
          fmt::format("{}:{}: knob {} is declared more than once", k.path, k.line, k.name));
    }
  }
  return out;
}

std::string set_knobs(const std::string& path, const std::string& text,
                      const std::map<std::string, std::string>& values) {
  std::vector<std::string> lines = split_lines(text);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    ValueSpan span;
    if (auto k = parse_line(path, static_cast<int>(i + 1), line, &span)) {
      auto it = values.find(k->name);
      if (it != values.end()) line.replace(span.begin, span.end - span.begin, it->second);
    }
    out += line;
    if (i + 1 < lines.size()) out += '\n';
  }
  return out;
}

std::string config_text(const std::vector<Knob>& knobs, const std::vector<int>& config) {
  std::string s;
  for (size_t i = 0; i < knobs.size() && i < config.size(); ++i) {
    if (!s.empty()) s += ' ';
    s += knobs[i].name + "=" + knobs[i].values[config[i]];
  }
  return s;
}

std::optional<std::vector<int>> parse_config_text(const std::vector<Knob>& knobs,
                                                  const std::string& text) {
  std::map<std::string, std::string> given;
  std::stringstream ss(text);
  for (std::string tok; ss >> tok;) {
    size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    given[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  std::vector<int> config;
  for (const Knob& k : knobs) {
    auto it = given.find(k.name);
    if (it == given.end()) return std::nullopt;
    int idx = -1;
    for (size_t i = 0; i < k.values.size(); ++i) {
      if (k.values[i] == it->second) idx = static_cast<int>(i);
    }
    if (idx < 0) return std::nullopt;
    config.push_back(idx);
  }
  return config;
}

}  // namespace marathon
