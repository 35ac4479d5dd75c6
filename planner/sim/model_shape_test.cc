#include "planner/sim/model_shape.h"

#include "gtest/gtest.h"

namespace semmoe::planner::sim {
namespace {

TEST(ModelShapeTest, JsonRoundTripsAndRefusesWhatDoesNotFit) {
  const ModelShape v3 = *KnownShape("deepseek-v3");
  auto back = ShapeFromJson(ShapeToJson(v3), "v3.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ShapeToJson(*back), ShapeToJson(v3));
  EXPECT_EQ(back->moe_layer, v3.moe_layer);
  EXPECT_EQ(back->attention_params, v3.attention_params);
  for (const char* bad : {"", "[]", "{}", R"({"format": "semmoe-cluster-profile"})",
                          R"({"format": "semmoe-model-shape", "hidden": 1.5})",
                          R"({"format": "semmoe-model-shape", "hidden": 10})"}) {
    auto s = ShapeFromJson(bad, "s.json");
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("s.json"), std::string::npos) << s.status();
  }
  std::string text = ShapeToJson(v3);
  text.replace(text.find("\"top_k\": 8"), 10, "\"top_k\": 999");  // More than the experts.
  EXPECT_FALSE(ShapeFromJson(text, "s.json").ok());
}

}  // namespace
}  // namespace semmoe::planner::sim
