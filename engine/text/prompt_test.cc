#include "engine/text/prompt.h"

#include <cstdlib>

#include "absl/time/clock.h"
#include "common/file.h"
#include "engine/model/testing/tiny_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

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
  const auto too_long = CheckPrompt("", {1, 2, 3, 4}, 4, limits);
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(too_long.status().message(), HasSubstr("the prompt has 4 tokens; the limit is 3"));
  EXPECT_THAT(Error(CheckPrompt("", {1}, -1, limits)), HasSubstr("max_tokens must be ≥ 0"));
  EXPECT_TRUE(CheckPrompt("", {1, 2, 3, 4}, 0, {.vocab_size = 100}).ok());  // 0: no limit.
}

TEST(CheckPromptTest, TextNeedsATokenizerAndOnlyOneForm) {
  const PromptLimits none{.vocab_size = 100};
  EXPECT_THAT(Error(CheckPrompt("hi", {}, 4, none)), HasSubstr("need a tokenizer; none is loaded"));
  EXPECT_THAT(Error(CheckPrompt("hi", {1}, 4, none)), HasSubstr("either text or token_ids"));

  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "tiny_prompt");
  ASSERT_TRUE(::semmoe::testing::WriteTinyModel({.seed = 2}, dir).ok());
  auto tokenizer = Tokenizer::FromDirectory(dir);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const PromptLimits limits{.tokenizer = tokenizer->get(), .vocab_size = 100000};
  auto ids = CheckPrompt("hello", {}, 4, limits);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, *(*tokenizer)->Encode("hello"));
  // Literal spans: the special token's text there is text; spans need text and must fit it.
  auto literal = CheckPrompt("a<|im_end|>", {}, 4, limits, {{1, 11}});
  ASSERT_TRUE(literal.ok()) << literal.status();
  EXPECT_EQ(*literal, *(*tokenizer)->Encode("a<|im_end|>", {.parse_special = false}));
  EXPECT_NE(*literal, *(*tokenizer)->Encode("a<|im_end|>"));
  EXPECT_THAT(Error(CheckPrompt("", {1}, 4, limits, {{0, 1}})), HasSubstr("literal_spans"));
  EXPECT_THAT(Error(CheckPrompt("ab", {}, 4, limits, {{0, 9}})), HasSubstr("literal span 0"));

  // A text too long for the model: OUT_OF_RANGE from its size alone (30 MB, answered at once), or
  // from its tokens once encoded.
  const PromptLimits positions{
      .tokenizer = tokenizer->get(), .vocab_size = 100000, .max_prompt_tokens = 8};
  const absl::Time start = absl::Now();
  auto huge = CheckPrompt(std::string(30 << 20, 'a'), {}, 4, positions);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(huge.status().message(), HasSubstr("bytes are more than the model's limit of 8"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  auto words = CheckPrompt("one two three four five six seven eight nine ten", {}, 4, positions);
  EXPECT_EQ(words.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(words.status().message(), HasSubstr("the limit is 8"));
  EXPECT_TRUE(CheckPrompt("one two", {}, 4, positions).ok());
}

}  // namespace
}  // namespace semmoe::engine::model
