#include "engine/text/generation_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::engine::model {
namespace {

ModelConfig Model() {
  ModelConfig c;
  c.vocab_size = 100;
  c.eos_token_ids = {7};
  return c;
}

TEST(GenerationConfigTest, MergesEosAndReadsSampling) {
  auto g = ParseGenerationConfig(
      R"({"eos_token_id": [7, 9], "do_sample": true, "temperature": 0.6, "top_p": 0.95})", Model());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->eos_token_ids, ::testing::ElementsAre(7, 9));
  EXPECT_TRUE(g->do_sample);
  EXPECT_FLOAT_EQ(g->temperature, 0.6f);
  EXPECT_EQ(g->top_k, 50);  // HF default when sampling without top_k.
}

TEST(GenerationConfigTest, Errors) {
  EXPECT_FALSE(ParseGenerationConfig(R"({"eos_token_id": 100})", Model()).ok());
  EXPECT_FALSE(ParseGenerationConfig(R"({"top_p": 0})", Model()).ok());
  EXPECT_FALSE(ParseGenerationConfig(R"({"temperature": "hot"})", Model()).ok());
  EXPECT_FALSE(ParseGenerationConfig("{", Model()).ok());
  auto missing = LoadGenerationConfig("/nonexistent", Model());
  ASSERT_TRUE(missing.ok());
  EXPECT_THAT(missing->eos_token_ids, ::testing::ElementsAre(7));
}

}  // namespace
}  // namespace semmoe::engine::model
