#include "engine/text/unicode.h"

#include "gtest/gtest.h"

namespace semmoe::engine::model {
namespace {

TEST(UnicodeTest, DecodesAndReEncodes) {
  std::string text = "a\u00e9\u4f60\U0001F600";
  auto cps = DecodeUtf8(text);
  ASSERT_TRUE(cps.ok());
  ASSERT_EQ(cps->size(), 4u);
  EXPECT_EQ((*cps)[3].value, 0x1F600u);
  EXPECT_EQ((*cps)[3].byte_offset, 6u);
  std::string back;
  for (const CodePoint& cp : *cps) AppendUtf8(cp.value, back);
  EXPECT_EQ(back, text);
}

TEST(UnicodeTest, RejectsInvalidUtf8WithItsOffset) {
  for (const std::string& bad :
       {std::string("ab\xff"), std::string("ab\xc3"), std::string("ab\xc0\xaf"),  // overlong
        std::string("ab\xed\xa0\x80"),                                            // surrogate
        std::string("ab\xf4\x90\x80\x80"), std::string("ab\x80")}) {
    auto cps = DecodeUtf8(bad);
    ASSERT_FALSE(cps.ok());
    EXPECT_EQ(cps.status().message(), "invalid UTF-8 at byte 2");
  }
}

TEST(UnicodeTest, ToValidUtf8ReplacesOnlyTheBadBytes) {
  EXPECT_EQ(ToValidUtf8("h\xc3\xa9llo \xe4\xbd\xa0"), "h\xc3\xa9llo \xe4\xbd\xa0");
  EXPECT_EQ(ToValidUtf8("a\xff"
                        "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(ToValidUtf8("cut \xe4\xbd"), "cut \xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(ToValidUtf8(""), "");
}

TEST(UnicodeTest, CompleteUtf8PrefixHoldsBackCutSequences) {
  std::string euro = "\xe2\x82\xac";
  EXPECT_EQ(CompleteUtf8Prefix("a" + euro), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("a" + euro.substr(0, 2)), 1u);
  EXPECT_EQ(CompleteUtf8Prefix("a" + euro.substr(0, 1)), 1u);
  EXPECT_EQ(CompleteUtf8Prefix(""), 0u);
}

TEST(UnicodeTest, Nfc) {
  EXPECT_EQ(*NormalizeNfc("e\u0301"), "\u00e9");
  EXPECT_EQ(*NormalizeNfc("\u212b"), "\u00c5");  // Angstrom sign → Å.
  EXPECT_EQ(*NormalizeNfc("plain"), "plain");
  EXPECT_FALSE(NormalizeNfc("\xff").ok());
}

TEST(UnicodeTest, Classes) {
  EXPECT_TRUE(IsLetter('a'));
  EXPECT_TRUE(IsLetter(0x4f60));  // 你
  EXPECT_FALSE(IsLetter('1'));
  EXPECT_TRUE(IsNumber(0x2460));  // ① (No)
  EXPECT_TRUE(IsNumber(0x0663));  // Arabic-Indic three (Nd)
  EXPECT_TRUE(IsWhitespace(0x3000));
  EXPECT_TRUE(IsWhitespace(0x85));
  EXPECT_FALSE(IsWhitespace(0x200B));  // Zero-width space is not White_Space.
  EXPECT_FALSE(IsLetter(0x1F600));
}

}  // namespace
}  // namespace semmoe::engine::model
