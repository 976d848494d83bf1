// PayloadReader: typed reads of one JSON object whose errors name the event type and the field
// (PayloadError). A member that is absent or null is "missing"; the optional reads return their
// default then. Used by the payload conversions (events.cc, eval_result.cc).
#pragma once

#include <optional>
#include <string>

#include "core/events.h"

namespace marathon {

class PayloadReader {
 public:
  // `type` names the event (or record) in errors; `prefix` is the path of `j` in it ("goal.").
  PayloadReader(const json& j, std::string type, std::string prefix = "");

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const;
  PayloadReader sub(const json& j, const std::string& field) const;

  const json* find(const char* k) const;  // null when absent or null
  bool has(const char* k) const { return find(k) != nullptr; }

  std::string str(const char* k) const;  // required
  std::string opt_str(const char* k, const std::string& def = "") const;
  std::optional<std::string> maybe_str(const char* k) const;
  std::optional<double> opt_num(const char* k) const;
  double num(const char* k, double def) const { return opt_num(k).value_or(def); }
  // A number read as an integer (as fold always has: a double is truncated); one no int64 holds
  // fails "is out of range".
  std::optional<int64_t> opt_int(const char* k) const;
  // The same, but a number beyond int64 gives the nearest int64 (0 when absent).
  int64_t saturated_int(const char* k) const;
  int64_t integer(const char* k, int64_t def) const { return opt_int(k).value_or(def); }
  bool opt_bool(const char* k, bool def) const;
  const json& obj(const char* k) const;  // required object
  const json* opt_obj(const char* k) const;
  const json* opt_arr(const char* k) const;

  const json& json_value() const { return j_; }

 private:
  const json& j_;
  std::string type_;
  std::string prefix_;
};

}  // namespace marathon
