// The registry's gate in front of every tool: names, JSON, schema.
#include "tools/tool_registry.h"

#include <gtest/gtest.h>

#include "tools/json_schema.h"
#include "tools/workspace_tools.h"
#include "tools_test_support.h"

namespace marathon {
namespace {

ToolRegistry workspace_registry() {
  ToolRegistry reg;
  for (auto& t : make_workspace_tools()) reg.add(std::move(t));
  return reg;
}

TEST(JsonSchema, ReportsEveryViolationWithItsPlace) {
  json schema = R"({"type":"object","properties":{
      "path":{"type":"string"},"mode":{"type":"string","enum":["a","b"]},
      "n":{"type":"integer","minimum":1,"maximum":10},
      "tags":{"type":"array","items":{"type":"string"}}},
      "required":["path"],"additionalProperties":false})"_json;
  auto errors = validate_schema(R"({"mode":"c","n":0,"tags":["x",3],"extra":true})"_json, schema);
  ASSERT_EQ(errors.size(), 5u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], "arguments.path: required property is missing");
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  EXPECT_NE(all.find("arguments.mode: \"c\" is not one of [\"a\",\"b\"]"), std::string::npos)
      << all;
  EXPECT_NE(all.find("arguments.n: 0 is below the minimum 1"), std::string::npos) << all;
  EXPECT_NE(all.find("arguments.tags[1]: expected string, got integer"), std::string::npos) << all;
  EXPECT_NE(all.find("arguments.extra: unknown property"), std::string::npos) << all;
  EXPECT_TRUE(validate_schema(R"({"path":"x","n":2.0})"_json, schema).empty());
  EXPECT_EQ(validate_schema(json::array(), schema)[0], "arguments: expected object, got array");
}

// validate_schema never throws, whatever the schema (tests/fuzz/corpus/tool_args/
// regression-schema-*.json): a type list with a non-string, a length bound no size_t holds.
TEST(JsonSchema, MalformedSchemaKeywordsDoNotThrow) {
  std::vector<std::string> errors;
  EXPECT_NO_THROW(errors = validate_schema(json(1.5), R"({"type":["string",1]})"_json));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "arguments: expected string or 1, got number");
  EXPECT_TRUE(validate_schema(json("abc"), R"({"minLength":-1,"maxLength":1e300})"_json).empty());
  EXPECT_EQ(validate_schema(json("abc"), R"({"minLength":1e300})"_json).size(), 1u);
}

TEST(ToolRegistry, UnknownToolListsTheValidNames) {
  testing::TempWorkspace w;
  ToolResult r = workspace_registry().call("delete_all", "{}", w.ctx);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.output,
            "error: unknown tool \"delete_all\"; the tools are: read_file, write_file, edit_file, "
            "list_files, grep, run");
}

TEST(ToolRegistry, InvalidJsonArgumentsAreAClearErrorNotACrash) {
  testing::TempWorkspace w;
  auto reg = workspace_registry();
  ToolResult r = reg.call("read_file", "{\"path\": \"a.txt\"", w.ctx);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("arguments of read_file are not valid JSON"), std::string::npos)
      << r.output;
  ToolResult arr = reg.call("read_file", "[\"a.txt\"]", w.ctx);
  EXPECT_NE(arr.output.find("must be a JSON object, got array"), std::string::npos) << arr.output;
}

// json::parse throws out_of_range, not parse_error, for a number no double holds
// (tests/fuzz/corpus/tool_args/regression-number-overflow.json).
TEST(ToolRegistry, ArgumentsWithANumberOutOfRangeAreAClearErrorNotACrash) {
  testing::TempWorkspace w;
  ToolResult r =
      workspace_registry().call("read_file", R"({"path":"a.txt","end_line":1e400})", w.ctx);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("arguments of read_file are not valid JSON"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("number overflow"), std::string::npos) << r.output;
}

TEST(ToolRegistry, SchemaInvalidArgumentsNameTheFieldAndShowTheSchema) {
  testing::TempWorkspace w;
  auto reg = workspace_registry();
  ToolResult r = reg.call("write_file", R"({"path": 7, "contents": "x"})", w.ctx);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("error: invalid arguments for `write_file`:"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("arguments.path: expected string, got integer"), std::string::npos);
  EXPECT_NE(r.output.find("arguments.content: required property is missing"), std::string::npos);
  EXPECT_NE(r.output.find("arguments.contents: unknown property (allowed: content, path)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(w.ws() / "7"));
}

TEST(ToolRegistry, OpenAiToolsArrayDescribesEveryTool) {
  json tools = workspace_registry().openai_tools();
  ASSERT_EQ(tools.size(), 6u);
  for (const json& t : tools) {
    EXPECT_EQ(t["type"], "function");
    EXPECT_FALSE(t["function"]["description"].get<std::string>().empty());
    EXPECT_EQ(t["function"]["parameters"]["type"], "object");
  }
  ToolRegistry reg = workspace_registry();
  EXPECT_THROW(reg.add(std::move(make_workspace_tools()[0])), std::invalid_argument);
}

}  // namespace
}  // namespace marathon
