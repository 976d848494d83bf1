// parse_json: a recursive-descent JSON reader that builds nlohmann::json directly. It follows
// json::parse (RFC 8259 grammar, strict UTF-8, surrogate pairs, unsigned/integer/float numbers, the
// last of duplicate keys wins); whatever it does not accept goes to json::parse instead.
// read_outside_json: the same reader, bounded; whatever it does not accept goes to nlohmann's SAX
// parser (iterative) under a handler that builds the value and stops at the depth bound, so the
// refusal and its reason come out before anything past the bound exists.
#include "core/json_reader.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace marathon {
namespace {

struct NotHandled {};  // thrown inside the reader; parse_json then asks json::parse

constexpr int kMaxDepth = 256;

class Reader {
 public:
  explicit Reader(std::string_view text, int max_depth = kMaxDepth)
      : p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth) {}

  json document(const std::vector<std::string_view>& leave_out) {
    ws();
    json v = leave_out.empty() ? value(0) : top_object(leave_out);
    ws();
    if (p_ != end_) throw NotHandled{};
    return v;
  }

 private:
  const char* p_;
  const char* end_;
  int max_depth_;

  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  char peek() const {
    if (p_ == end_) throw NotHandled{};
    return *p_;
  }
  void expect(char c) {
    if (p_ == end_ || *p_ != c) throw NotHandled{};
    ++p_;
  }
  void literal(const char* word, size_t n) {
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) throw NotHandled{};
    p_ += n;
  }

  json value(int depth) {
    switch (peek()) {
      case '{':
        return object(depth + 1);
      case '[':
        return array(depth + 1);
      case '"': {
        ++p_;
        json s(json::value_t::string);
        string_body(s.get_ref<std::string&>());
        return s;
      }
      case 't':
        literal("true", 4);
        return true;
      case 'f':
        literal("false", 5);
        return false;
      case 'n':
        literal("null", 4);
        return nullptr;
      default:
        return number();
    }
  }

  // The top-level object, less the members named in leave_out.
  json top_object(const std::vector<std::string_view>& leave_out) {
    if (peek() != '{') return value(0);
    return object(1, &leave_out);
  }

  // Keys arrive sorted when the text came from json::dump (std::map order), so the end is
  // usually the place. The last of duplicate keys wins, as in json::parse.
  static void put(json::object_t& obj, const std::string& key, json&& v) {
    if (obj.empty() || obj.rbegin()->first < key) {
      obj.emplace_hint(obj.end(), key, std::move(v));
    } else {
      obj[key] = std::move(v);
    }
  }

  // An object; members named in *leave_out are stepped over, not built.
  json object(int depth, const std::vector<std::string_view>* leave_out = nullptr) {
    if (depth > max_depth_) throw NotHandled{};
    ++p_;
    json out(json::value_t::object);
    auto& obj = out.get_ref<json::object_t&>();
    ws();
    if (peek() == '}') {
      ++p_;
      return out;
    }
    std::string key;
    for (;;) {
      ws();
      expect('"');
      key.clear();
      string_body(key);
      ws();
      expect(':');
      ws();
      bool skip = false;
      if (leave_out) {
        for (std::string_view k : *leave_out) skip = skip || k == key;
      }
      if (skip) {
        skip_value(depth);
        obj.erase(key);  // as if removed after parsing, duplicates included
      } else {
        put(obj, key, value(depth));
      }
      ws();
      if (peek() == ',') {
        ++p_;
        continue;
      }
      expect('}');
      return out;
    }
  }

  json array(int depth) {
    if (depth > max_depth_) throw NotHandled{};
    ++p_;
    json out(json::value_t::array);
    auto& arr = out.get_ref<json::array_t&>();
    ws();
    if (peek() == ']') {
      ++p_;
      return out;
    }
    for (;;) {
      ws();
      arr.push_back(value(depth));
      ws();
      if (peek() == ',') {
        ++p_;
        continue;
      }
      expect(']');
      return out;
    }
  }

  // After the opening quote: appends the decoded string to `out` and moves past the closing one.
  void string_body(std::string& out) {
    for (;;) {
      const char* run = p_;
      while (p_ < end_) {
        unsigned char c = static_cast<unsigned char>(*p_);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++p_;
      }
      out.append(run, static_cast<size_t>(p_ - run));
      if (p_ == end_) throw NotHandled{};
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return;
      }
      if (c < 0x20) throw NotHandled{};  // control characters must be escaped
      if (c >= 0x80) {
        utf8_sequence(out);
      } else {
        escape(out);
      }
    }
  }

  // One multi-byte UTF-8 sequence, checked as json::parse checks it (RFC 3629).
  void utf8_sequence(std::string& out) {
    auto byte = [&](size_t i) -> unsigned char {
      if (p_ + i >= end_) throw NotHandled{};
      return static_cast<unsigned char>(p_[i]);
    };
    auto in = [](unsigned char b, unsigned char lo, unsigned char hi) {
      return b >= lo && b <= hi;
    };
    unsigned char b0 = byte(0);
    size_t n;
    if (in(b0, 0xC2, 0xDF)) {
      n = 2;
      if (!in(byte(1), 0x80, 0xBF)) throw NotHandled{};
    } else if (in(b0, 0xE0, 0xEF)) {
      n = 3;
      unsigned char lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
      if (!in(byte(1), lo, hi) || !in(byte(2), 0x80, 0xBF)) throw NotHandled{};
    } else if (in(b0, 0xF0, 0xF4)) {
      n = 4;
      unsigned char lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
      if (!in(byte(1), lo, hi) || !in(byte(2), 0x80, 0xBF) || !in(byte(3), 0x80, 0xBF)) {
        throw NotHandled{};
      }
    } else {
      throw NotHandled{};
    }
    out.append(p_, n);
    p_ += n;
  }

  unsigned hex4() {
    if (end_ - p_ < 4) throw NotHandled{};
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = *p_++;
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        throw NotHandled{};
      }
    }
    return v;
  }

  void escape(std::string& out) {
    ++p_;  // the backslash
    if (p_ == end_) throw NotHandled{};
    char c = *p_++;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out += c;
        return;
      case 'b':
        out += '\b';
        return;
      case 'f':
        out += '\f';
        return;
      case 'n':
        out += '\n';
        return;
      case 'r':
        out += '\r';
        return;
      case 't':
        out += '\t';
        return;
      case 'u':
        break;
      default:
        throw NotHandled{};
    }
    unsigned cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) throw NotHandled{};  // a lone low surrogate
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') throw NotHandled{};
      p_ += 2;
      unsigned lo = hex4();
      if (lo < 0xDC00 || lo > 0xDFFF) throw NotHandled{};
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, typed as json::parse types it: without a
  // fraction or exponent, unsigned (no minus) or integer (minus) when it fits, else a double.
  json number() {
    const char* start = p_;
    auto digits = [&] {
      const char* d = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      return p_ - d;
    };
    bool negative = p_ < end_ && *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_) throw NotHandled{};
    if (*p_ == '0') {
      ++p_;
    } else if (digits() == 0) {
      throw NotHandled{};
    }
    bool is_float = false;
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (digits() == 0) throw NotHandled{};
      is_float = true;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (digits() == 0) throw NotHandled{};
      is_float = true;
    }
    if (!is_float) {
      if (negative) {
        int64_t v = 0;
        auto r = std::from_chars(start, p_, v);
        if (r.ec == std::errc() && r.ptr == p_) return json(static_cast<json::number_integer_t>(v));
      } else {
        uint64_t v = 0;
        auto r = std::from_chars(start, p_, v);
        if (r.ec == std::errc() && r.ptr == p_)
          return json(static_cast<json::number_unsigned_t>(v));
      }
    }
    double d = 0;
    auto r = std::from_chars(start, p_, d);
    if (r.ec == std::errc() && r.ptr == p_) return json(d);
    // Out of range: json::parse refuses an overflow and keeps strtod's value for an underflow.
    std::string token(start, p_);
    double v = std::strtod(token.c_str(), nullptr);
    if (!std::isfinite(v)) throw NotHandled{};
    return json(v);
  }

  // Moves past one value without building it (structure only: strings are not decoded).
  void skip_value(int depth) {
    char first = peek();
    if (!(first == '"' || first == '{' || first == '[' || first == '-' || first == 't' ||
          first == 'f' || first == 'n' || (first >= '0' && first <= '9'))) {
      throw NotHandled{};
    }
    int open = 0;
    do {
      char c = peek();
      if (c == '"') {
        skip_string();
      } else if (c == '{' || c == '[') {
        if (depth + open > max_depth_) throw NotHandled{};
        ++open;
        ++p_;
      } else if (c == '}' || c == ']') {
        if (open == 0) throw NotHandled{};
        --open;
        ++p_;
      } else {
        ++p_;  // ',', ':', whitespace, numbers and literals
      }
    } while (open > 0 || (p_ < end_ && *p_ != ',' && *p_ != '}' && !is_ws(*p_)));
  }
  static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  void skip_string() {
    ++p_;
    for (;;) {
      const void* q = std::memchr(p_, '"', static_cast<size_t>(end_ - p_));
      if (!q) throw NotHandled{};
      const char* quote = static_cast<const char*>(q);
      size_t backslashes = 0;
      while (quote - static_cast<std::ptrdiff_t>(backslashes) - 1 >= p_ &&
             quote[-static_cast<std::ptrdiff_t>(backslashes) - 1] == '\\') {
        ++backslashes;
      }
      p_ = quote + 1;
      if (backslashes % 2 == 0) return;
    }
  }
};

// Builds the value from nlohmann's SAX events (the parser itself is iterative), refusing a
// container that would nest past max_depth and keeping the reason of any refusal.
class BoundedDom {
 public:
  explicit BoundedDom(int max_depth) : max_depth_(max_depth) {}

  json root;
  std::string error;
  bool too_deep = false;

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) {
    if (!std::isfinite(v)) {  // the parser refuses these first; kept as a second guard
      error = "number overflow: a value that is not a finite double";
      return false;
    }
    return put(json(v));
  }
  bool string(json::string_t& v) { return put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool key(json::string_t& k) {
    member_ = &open_.back()->get_ref<json::object_t&>()[k];  // the last of duplicates wins
    return true;
  }
  bool end_object() {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string& token, const json::exception& e) {
    if (e.id == 406) {
      error = "number overflow at byte " + std::to_string(position) + ": " + excerpt(token, 48) +
              " is out of the range of a double";
    } else {
      error = excerpt(e.what(), 360);
    }
    return false;
  }

  // Printable ASCII only (an excerpt of hostile bytes goes into logs and prompts), at most n bytes.
  static std::string excerpt(std::string_view s, size_t n) {
    std::string out;
    for (size_t i = 0; i < s.size() && i < n; ++i) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
    }
    if (s.size() > n) out += "... (" + std::to_string(s.size()) + " bytes)";
    return out;
  }

 private:
  int max_depth_;
  std::vector<json*> open_;  // the containers being filled, outermost first
  json* member_ = nullptr;   // where the next value of the innermost object goes

  // Places v in the innermost open container (or as the root) and returns where it went.
  json* place(json&& v) {
    if (open_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& top = *open_.back();
    if (top.is_array()) {
      auto& a = top.get_ref<json::array_t&>();
      a.push_back(std::move(v));
      return &a.back();
    }
    *member_ = std::move(v);
    return member_;
  }
  bool put(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json::value_t t) {
    if (static_cast<int>(open_.size()) >= max_depth_) {
      too_deep = true;
      return false;
    }
    open_.push_back(place(json(t)));
    return true;
  }
};

// The byte at which `text` first opens a container deeper than max_depth (strings skipped), or
// npos.
size_t too_deep_at(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace

OutsideJson read_outside_json(std::string_view text, int max_depth) {
  OutsideJson out;
  try {
    out.value = Reader(text, max_depth).document({});
    return out;
  } catch (const NotHandled&) {
  }
  // Not accepted by the fast reader: malformed, too deep, a number out of range, or a form the
  // fast reader leaves to nlohmann. The SAX parser says which, and builds the value when it is
  // none.
  BoundedDom dom(max_depth);
  bool ok = json::sax_parse(text.data(), text.data() + text.size(), &dom);
  if (ok) {
    out.value = std::move(dom.root);
    return out;
  }
  if (dom.too_deep) {
    size_t at = too_deep_at(text, max_depth);
    out.error = "JSON nested deeper than " + std::to_string(max_depth) +
                " levels of arrays and objects" +
                (at == std::string_view::npos ? "" : " (at byte " + std::to_string(at) + ")") +
                "; refused while reading";
  } else {
    out.error = dom.error.empty() ? "not valid JSON" : dom.error;
  }
  return out;  // dom.root, partly built and at most max_depth deep, goes with dom
}

json parse_json(std::string_view text, const std::vector<std::string_view>& leave_out) {
  try {
    return Reader(text).document(leave_out);
  } catch (const NotHandled&) {
    json j = json::parse(text);
    if (j.is_object()) {
      for (std::string_view k : leave_out) j.erase(std::string(k));
    }
    return j;
  }
}

}  // namespace marathon
