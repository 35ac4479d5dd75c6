#include "engine/model/prompt.h"

#include <cstdlib>

#include "common/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/tiny_model/tiny_model.h"

namespace semmoe::engine::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Error(const absl::StatusOr<std::vector<int32_t>>& r) {
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

TEST(CheckPromptTest, TokenIds) {
  const PromptLimits limits{.vocab_size = 100, .max_prompt_tokens = 3};
  EXPECT_THAT(*CheckPrompt("", {1, 99}, 4, limits), ElementsAre(1, 99));
  EXPECT_THAT(Error(CheckPrompt("", {1, 100}, 4, limits)),
              HasSubstr("token_ids: 100 is outside the vocabulary [0, 100)"));
  EXPECT_THAT(Error(CheckPrompt("", {-1}, 4, limits)), HasSubstr("-1 is outside"));
  EXPECT_THAT(Error(CheckPrompt("", {}, 4, limits)), HasSubstr("the prompt is empty"));
  EXPECT_THAT(Error(CheckPrompt("", {1, 2, 3, 4}, 4, limits)),
              HasSubstr("the prompt has 4 tokens; the limit is 3"));
  EXPECT_THAT(Error(CheckPrompt("", {1}, -1, limits)), HasSubstr("max_tokens must be ≥ 0"));
  EXPECT_TRUE(CheckPrompt("", {1, 2, 3, 4}, 0, {.vocab_size = 100}).ok());  // 0: no limit.
}

TEST(CheckPromptTest, TextNeedsATokenizerAndOnlyOneForm) {
  const PromptLimits none{.vocab_size = 100};
  EXPECT_THAT(Error(CheckPrompt("hi", {}, 4, none)), HasSubstr("need a tokenizer; none is loaded"));
  EXPECT_THAT(Error(CheckPrompt("hi", {1}, 4, none)), HasSubstr("either text or token_ids"));

  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "tiny_prompt");
  ASSERT_TRUE(tools::WriteTinyModel({.seed = 2}, dir).ok());
  auto tokenizer = Tokenizer::FromDirectory(dir);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const PromptLimits limits{.tokenizer = tokenizer->get(), .vocab_size = 100000};
  auto ids = CheckPrompt("hello", {}, 4, limits);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, *(*tokenizer)->Encode("hello"));
}

}  // namespace
}  // namespace semmoe::engine::model
