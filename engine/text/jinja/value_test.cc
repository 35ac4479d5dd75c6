#include "engine/text/jinja/value.h"

#include <string>

#include "gtest/gtest.h"

namespace semmoe::engine::jinja {
namespace {

TEST(ValueTest, RendersAsPythonStr) {
  EXPECT_EQ(Value::None().Render(), "None");
  EXPECT_EQ(Value::Bool(true).Render(), "True");
  EXPECT_EQ(Value::Int(-3).Render(), "-3");
  EXPECT_EQ(Value::Float(1).Render(), "1.0");
  EXPECT_EQ(Value::Float(1.5).Render(), "1.5");
  EXPECT_EQ(Value::Float(1e-5).Render(), "1e-05");
  EXPECT_EQ(Value::Float(1e16).Render(), "1e+16");
  EXPECT_EQ(Value::Float(123456.25).Render(), "123456.25");
  EXPECT_EQ(Value::String("it's").Render(), "it's");
  EXPECT_EQ(Value().Render(), "");
  EXPECT_EQ(Value::NewList({Value::String("a"), Value::Int(1), Value::String("it's")}).Render(),
            "['a', 1, \"it's\"]");
  EXPECT_EQ(Value::NewDict({{"k", Value::None()}}).Render(), "{'k': None}");
}

TEST(ValueTest, ToJsonIsPythonJsonDumps) {
  auto v = Value::FromJson(nlohmann::ordered_json::parse(
      R"({"b": [1, 2.5, null, true], "a": "x\"y\n\u0001é", "e": {}, "l": []})"));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v->ToJson(), R"({"b": [1, 2.5, null, true], "a": "x\"y\n\u0001é", "e": {}, "l": []})");
  EXPECT_EQ(*v->ToJson(2),
            "{\n  \"b\": [\n    1,\n    2.5,\n    null,\n    true\n  ],\n"
            "  \"a\": \"x\\\"y\\n\\u0001é\",\n  \"e\": {},\n  \"l\": []\n}");
  EXPECT_FALSE(Value().ToJson().ok());
  EXPECT_FALSE(Value::NewNamespace().ToJson().ok());
}

TEST(ValueTest, FromJsonRefusesDeepNesting) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  EXPECT_FALSE(Value::FromJson(nlohmann::ordered_json::parse(deep)).ok());
  EXPECT_TRUE(Value::FromJson(nlohmann::ordered_json::parse(deep), 200).ok());
}

TEST(ValueTest, TruthAndEqualityFollowPython) {
  EXPECT_FALSE(Value().Truthy());
  EXPECT_FALSE(Value::String("").Truthy());
  EXPECT_FALSE(Value::NewList().Truthy());
  EXPECT_TRUE(Value::NewNamespace().Truthy());
  EXPECT_TRUE(Value::Int(1) == Value::Float(1.0));
  EXPECT_TRUE(Value::Bool(true) == Value::Int(1));
  EXPECT_FALSE(Value::String("1") == Value::Int(1));
  EXPECT_TRUE(Value::NewDict({{"a", Value::Int(1)}, {"b", Value::Int(2)}}) ==
              Value::NewDict({{"b", Value::Int(2)}, {"a", Value::Int(1)}}));
}

TEST(ValueTest, ListsAreSharedReferences) {
  Value ns = Value::NewNamespace();
  Value copy = ns;
  copy.Set("x", Value::Int(3));
  EXPECT_EQ(ns.Get("x").int_value(), 3);
}

TEST(ValueTest, SelfReferenceDoesNotRecurseForever) {
  Value ns = Value::NewNamespace();
  ns.Set("self", ns);
  EXPECT_NE(ns.Render().find("{...}"), std::string::npos);
  EXPECT_FALSE(Value::NewList({ns}).ToJson().ok());
  EXPECT_FALSE(ns == Value::NewNamespace());
  ns.dict().clear();  // Break the cycle (the renderer does this for the namespaces it made).
}

}  // namespace
}  // namespace semmoe::engine::jinja
