#include "engine/text/pretokenizer.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::engine::model {
namespace {

std::vector<std::string> Split(const std::string& text) {
  auto cps = DecodeUtf8(text);
  EXPECT_TRUE(cps.ok());
  std::vector<std::string> out;
  for (const Piece& p : PretokenizeQwen2(*cps)) {
    size_t begin = (*cps)[p.begin].byte_offset;
    size_t end = (*cps)[p.end - 1].byte_offset + (*cps)[p.end - 1].byte_length;
    out.push_back(text.substr(begin, end - begin));
  }
  return out;
}

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(PretokenizerTest, Empty) { EXPECT_THAT(Split(""), IsEmpty()); }

TEST(PretokenizerTest, WordsTakeTheirLeadingSpace) {
  EXPECT_THAT(Split("Hello world"), ElementsAre("Hello", " world"));
}

TEST(PretokenizerTest, WhitespaceRunsLeaveOneSpaceForTheNextWord) {
  EXPECT_THAT(Split("a  b   c"), ElementsAre("a", " ", " b", "  ", " c"));
  EXPECT_THAT(Split("   "), ElementsAre("   "));
  EXPECT_THAT(Split("x  "), ElementsAre("x", "  "));
}

TEST(PretokenizerTest, NewlinesEndWhitespacePieces) {
  EXPECT_THAT(Split("a\n\n\n  d"), ElementsAre("a", "\n\n\n", " ", " d"));
  EXPECT_THAT(Split("x\r\n\r\ny  \n"), ElementsAre("x", "\r\n\r\n", "y", "  \n"));
  EXPECT_THAT(Split("  \n \n  x"), ElementsAre("  \n \n", " ", " x"));
}

TEST(PretokenizerTest, DigitsAreSingle) {
  EXPECT_THAT(Split("x 123"), ElementsAre("x", " ", "1", "2", "3"));
  EXPECT_THAT(Split("3.14"), ElementsAre("3", ".", "1", "4"));
}

TEST(PretokenizerTest, Contractions) {
  EXPECT_THAT(Split("I'm you'RE he'll"), ElementsAre("I", "'m", " you", "'RE", " he", "'ll"));
  EXPECT_THAT(Split("'x"), ElementsAre("'x"));  // Not a contraction: punctuation + letters.
}

TEST(PretokenizerTest, PunctuationTakesOneSpaceAndTrailingNewlines) {
  EXPECT_THAT(Split("f(x):\n  y"), ElementsAre("f", "(x", "):\n", " ", " y"));
  EXPECT_THAT(Split("a !!\n\nb"), ElementsAre("a", " !!\n\n", "b"));
}

TEST(PretokenizerTest, UnicodeLettersNumbersAndSymbols) {
  EXPECT_THAT(Split("你好 世界"), ElementsAre("你好", " 世界"));
  EXPECT_THAT(Split("naïve ① 😀😃"), ElementsAre("naïve", " ", "①", " 😀😃"));
  EXPECT_THAT(Split("tab\tand\u00a0nbsp"), ElementsAre("tab", "\tand", "\u00a0nbsp"));
}

}  // namespace
}  // namespace semmoe::engine::model
