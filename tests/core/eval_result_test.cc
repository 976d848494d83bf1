// EvalResult against the one schema of the evaluator contract (harness/result.schema.json): every
// field the runtime reads or writes is a property there, with the same JSON types and the same
// required flag; the contract's checks name what is wrong.
#include "core/eval_result.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

namespace marathon {
namespace {

using ::testing::HasSubstr;

json schema() {
  std::ifstream in(std::string(MARATHON_SOURCE_DIR) + "/harness/result.schema.json");
  return json::parse(in);
}

std::set<std::string> types_of(const json& property) {
  const json& t = property.at("type");
  if (t.is_string()) return {t.get<std::string>()};
  return t.get<std::set<std::string>>();
}

TEST(EvalResultSchema, EveryFieldTheRuntimeReadsIsInTheSchemaWithItsType) {
  json s = schema();
  const json& props = s.at("properties");
  std::set<std::string> required = s.at("required").get<std::set<std::string>>();
  for (const EvalResultField& f : eval_result_fields()) {
    ASSERT_TRUE(props.contains(f.name)) << "the schema lacks " << f.name;
    std::set<std::string> want(f.types.begin(), f.types.end());
    EXPECT_EQ(types_of(props.at(f.name)), want) << f.name;
    EXPECT_EQ(required.count(f.name) == 1, f.required) << f.name;
  }
  for (const std::string& r : required) {
    bool known = false;
    for (const EvalResultField& f : eval_result_fields()) known = known || r == f.name;
    EXPECT_TRUE(known) << "the schema requires " << r << ", which the runtime does not check";
  }
  EXPECT_EQ(s.at("properties").at("schema_version").at("const"), kEvalResultSchemaVersion);
}

TEST(EvalResultSchema, WhatToJsonWritesIsInTheSchema) {
  EvalResult r;
  r.score = 2.0;
  r.baseline_score = 1.0;
  r.error_kind = "timeout";
  r.failure = "f";
  r.error = "e";
  r.figures = {{"x", 1}};
  const json s = schema();
  const json& props = s.at("properties");
  const json written = to_json(r);
  for (const auto& [k, v] : written.items()) EXPECT_TRUE(props.contains(k)) << k;
}

TEST(EvalResult, TheBaselineIsReadAtTheTopLevel) {
  EvalResult r = read_eval_result(
      {{"correct", true}, {"score", 3.0}, {"baseline_score", 1.5}, {"metrics", json::object()}});
  ASSERT_TRUE(r.baseline_score);
  EXPECT_EQ(*r.baseline_score, 1.5);
  EvalResult none = read_eval_result({{"correct", true}, {"score", 3.0}});
  EXPECT_FALSE(none.baseline_score);
}

TEST(EvalResult, ValidationNamesTheFieldAndFillsDefaults) {
  json missing = {{"schema_version", 1}, {"score", 1.0}};
  EXPECT_EQ(validate_eval_output(missing), "missing field \"correct\"");
  json bad_baseline = {
      {"schema_version", 1}, {"correct", true}, {"score", 1.0}, {"baseline_score", "fast"}};
  EXPECT_THAT(validate_eval_output(bad_baseline), HasSubstr("\"baseline_score\" must be a number"));
  json bad_figures = {{"schema_version", 1}, {"correct", true}, {"score", 1.0}, {"figures", 3}};
  EXPECT_THAT(validate_eval_output(bad_figures), HasSubstr("\"figures\" must be an object"));
  json ok = {{"schema_version", 1}, {"correct", true}, {"score", nullptr}, {"extra", 1}};
  EXPECT_EQ(validate_eval_output(ok), "");
  EXPECT_EQ(ok["metrics"], json::object());
  EXPECT_EQ(ok["violations"], json::array());
  EXPECT_EQ(ok["log"], "");
  EXPECT_EQ(ok["extra"], 1) << "extra fields are kept";
}

}  // namespace
}  // namespace marathon
