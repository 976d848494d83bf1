// parse_json against json::parse: the same values (types included) for every text json::parse
// accepts, an exception for every text it refuses, and left-out members exactly removed.
#include "core/json_reader.h"

#include <gtest/gtest.h>

#include <random>

namespace marathon {
namespace {

// json == treats 1, 1u and 1.0 as equal: compare the types node by node as well.
void expect_same(const json& a, const json& b, const std::string& where) {
  ASSERT_EQ(a.type(), b.type()) << where;
  ASSERT_EQ(a.dump(), b.dump()) << where;
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      expect_same(it.value(), b.at(it.key()), where + "." + it.key());
    }
  } else if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i)
      expect_same(a[i], b[i], where + "[" + std::to_string(i) + "]");
  }
}

// Both accept with the same value, or both refuse.
void check(const std::string& text) {
  json want;
  bool ok = true;
  try {
    want = json::parse(text);
  } catch (const json::exception&) {  // parse_error, or out_of_range for 1e400
    ok = false;
  }
  if (!ok) {
    EXPECT_THROW(parse_json(text), json::exception) << text;
    return;
  }
  json got;
  ASSERT_NO_THROW(got = parse_json(text)) << text;
  expect_same(got, want, text);
}

TEST(JsonReader, SameValuesAsJsonParse) {
  for (const char* t : {"{}",
                        "[]",
                        "null",
                        "true",
                        "false",
                        "0",
                        "-0",
                        "1",
                        "-1",
                        "0.5",
                        "-0.0",
                        "1e3",
                        "1E-3",
                        "2.5e+10",
                        "18446744073709551615",
                        "18446744073709551616",
                        "-9223372036854775808",
                        "-9223372036854775809",
                        "9223372036854775808",
                        "1e400",
                        "-1e400",
                        "1e-400",
                        "0.1000000000000000055511151231257827",
                        "123456789012345678901234567890",
                        "\"\"",
                        "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
                        "\"\\u0000\\u001f\\u00e9\\u20ac\"",
                        "\"\\ud83d\\ude00\"",
                        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
                        " { \"b\" : [1, 2.0, {\"c\": null}], \"a\": \"x\" } ",
                        "{\"a\":1,\"a\":2}",
                        "{\"z\":1,\"a\":2,\"m\":{\"y\":[],\"b\":{}}}",
                        "[[[[[]]]]]",
                        "\t\r\n[1]\n"}) {
    check(t);
  }
}

TEST(JsonReader, RefusesWhatJsonParseRefuses) {
  for (const char* t : {"",
                        " ",
                        "{",
                        "}",
                        "[1,]",
                        "{\"a\":1,}",
                        "{\"a\" 1}",
                        "{a:1}",
                        "01",
                        "1.",
                        ".5",
                        "-",
                        "+1",
                        "1e",
                        "1e+",
                        "tru",
                        "nul",
                        "[1 2]",
                        "\"abc",
                        "\"\\x\"",
                        "\"\\u12\"",
                        "\"\\ud800\"",
                        "\"\\udc00\"",
                        "\"\\ud800\\u0041\"",
                        "\"a\tb\"",
                        "\"\xc0\xaf\"",
                        "\"\xed\xa0\x80\"",
                        "\"\xf5\x80\x80\x80\"",
                        "\"\xe2\x82\"",
                        "\"\x80\"",
                        "{} x",
                        "[] []",
                        "NaN",
                        "Infinity"}) {
    check(t);
  }
}

TEST(JsonReader, DeepNestingIsHandedToJsonParse) {
  std::string deep = std::string(2000, '[') + "1" + std::string(2000, ']');
  check(deep);
  check("{\"message\":" + deep + ",\"a\":1}");
  EXPECT_EQ(parse_json("{\"message\":" + deep + ",\"a\":1}", {"message"}).dump(), "{\"a\":1}");
}

// Random documents, dumped, and randomly damaged copies of them.
json random_json(std::mt19937_64& r, int depth) {
  switch (r() % (depth > 3 ? 5 : 7)) {
    case 0:
      return nullptr;
    case 1:
      return r() % 2 == 0;
    case 2:
      return static_cast<int64_t>(r()) >> (r() % 64);
    case 3:
      return std::ldexp(static_cast<double>(static_cast<int64_t>(r())),
                        static_cast<int>(r() % 200) - 100);
    case 4: {
      static const char* kPieces[] = {"a",  "Z",    " ",        "\"",           "\\",
                                      "\n", "\x01", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                      "/",  "\x7f"};
      std::string s;
      for (int n = static_cast<int>(r() % 12); n > 0; --n) s += kPieces[r() % 12];
      return s;
    }
    case 5: {
      json a = json::array();
      for (int n = static_cast<int>(r() % 5); n > 0; --n) a.push_back(random_json(r, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int n = static_cast<int>(r() % 5); n > 0; --n) {
        o[std::string(1, static_cast<char>('a' + r() % 6))] = random_json(r, depth + 1);
      }
      return o;
    }
  }
}

TEST(JsonReader, RandomDocumentsAndDamagedCopies) {
  std::mt19937_64 r(7);
  for (int i = 0; i < 3000; ++i) {
    std::string text = random_json(r, 0).dump();
    check(text);
    for (int k = 0; k < 3; ++k) {
      std::string bad = text;
      size_t at = r() % bad.size();
      switch (r() % 3) {
        case 0:
          bad[at] = "{}[]\",:\\0-eE.u \x80"[r() % 16];
          break;
        case 1:
          bad.erase(at, 1);
          break;
        default:
          bad.insert(at, 1, "{}[]\",:\\0-eE.u \xff"[r() % 16]);
      }
      check(bad);
    }
  }
}

TEST(JsonReader, LeavesOutTopLevelMembersOnly) {
  std::mt19937_64 r(11);
  for (int i = 0; i < 2000; ++i) {
    json doc = json::object();
    for (int n = static_cast<int>(r() % 6); n > 0; --n) {
      doc[std::string(1, static_cast<char>('a' + r() % 6))] = random_json(r, 1);
    }
    json want = json::parse(doc.dump());
    want.erase("b");
    want.erase("d");
    json got = parse_json(doc.dump(), {"b", "d"});
    expect_same(got, want, doc.dump());
  }
  // Nested members of the same name stay; the last of duplicate keys is left out too.
  EXPECT_EQ(parse_json(R"({"m":1,"x":{"m":2},"m":[3]})", {"m"}).dump(), R"({"x":{"m":2}})");
  // A left-out member's text is skipped, not parsed: only its structure is followed.
  EXPECT_EQ(parse_json(R"({"m":{"a":"]}\"",  "b":[1,{"c":"\\"}]},"n":0})", {"m"}).dump(),
            R"({"n":0})");
  EXPECT_THROW(parse_json(R"({"m":{"a":1},"n":})", {"m"}), json::parse_error);
  EXPECT_THROW(parse_json(R"({"m":,"n":1})", {"m"}), json::parse_error);
}

}  // namespace
}  // namespace marathon
