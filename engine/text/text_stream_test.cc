#include "engine/text/text_stream.h"

#include <cstdlib>
#include <string>

#include "common/file.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/text/tokenizer.h"
#include "gtest/gtest.h"

namespace semmoe::engine::model {
namespace {

class TextStreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "tiny");
    ASSERT_TRUE(::semmoe::testing::WriteTinyModel({.seed = 1}, dir).ok());  // Byte-level BPE.
    auto t = Tokenizer::FromDirectory(dir);
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = t->release();
  }
  static void TearDownTestSuite() { delete tokenizer_; }

  // Feeds `text`'s ids one at a time; returns the pieces sent.
  std::vector<std::string> Feed(TextStream& s, const std::string& text) {
    std::vector<std::string> pieces;
    const std::vector<int32_t> ids = *tokenizer_->Encode(text);
    for (int32_t id : ids) {
      absl::StatusOr<std::string> p = s.Add({id});
      EXPECT_TRUE(p.ok()) << p.status();
      if (!p->empty()) pieces.push_back(*p);
    }
    return pieces;
  }

  static Tokenizer* tokenizer_;
};
Tokenizer* TextStreamTest::tokenizer_ = nullptr;

TEST_F(TextStreamTest, MultiByteCharactersAreNeverSplit) {
  TextStream s(*tokenizer_, {});
  const std::string text = "héllo 你好 wörld 🙂!";
  std::string joined;
  for (const std::string& p : Feed(s, text)) {
    // Each piece is whole UTF-8: it never starts with a continuation byte.
    EXPECT_NE(static_cast<unsigned char>(p[0]) & 0xC0, 0x80) << p;
    joined += p;
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(s.Finish(), "");
  EXPECT_EQ(s.text(), text);
  EXPECT_FALSE(s.stopped());
}

// Byte tokens that are not UTF-8 (a random model makes them) become U+FFFD: the text is always
// valid UTF-8 (protobuf strings and JSON need it), an incomplete last character too.
TEST_F(TextStreamTest, InvalidBytesBecomeReplacementCharacters) {
  TextStream s(*tokenizer_, {});
  const int32_t ff = *tokenizer_->TokenId("\xff");  // Byte-level BPE's token for byte 0xFF.
  std::string joined = *s.Add(*tokenizer_->Encode("a"));
  joined += *s.Add({ff});
  joined += *s.Add(*tokenizer_->Encode("b"));
  EXPECT_EQ(joined,
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(s.Finish(), "");
  const std::string euro = "\xE2\x82\xAC";  // Three bytes, three byte tokens.
  TextStream t(*tokenizer_, {});
  EXPECT_EQ(*t.Add({*tokenizer_->TokenId(std::string(1, euro[0]))}), "");
  EXPECT_EQ(*t.Add({*tokenizer_->TokenId(std::string(1, euro[1]))}), "");
  EXPECT_EQ(t.Finish(), "\xEF\xBF\xBD\xEF\xBF\xBD");  // Cut short: both bytes invalid.
  EXPECT_EQ(t.Finish(), "");
}

TEST_F(TextStreamTest, StopsAtAStopStringAndHoldsBackItsPrefix) {
  TextStream s(*tokenizer_, {"END", "\n\n"});
  std::string joined;
  for (const std::string& p : Feed(s, "abc EN")) joined += p;
  EXPECT_EQ(joined, "abc ");  // "EN" may start "END": held back.
  for (const std::string& p : Feed(s, "Dx more")) joined += p;
  EXPECT_EQ(joined, "abc ");  // Nothing from the stop string on.
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.Finish(), "");
  EXPECT_EQ(s.text(), "abc ");
  TextStream t(*tokenizer_, {"END"});
  joined.clear();
  for (const std::string& p : Feed(t, "ENx")) joined += p;
  EXPECT_EQ(joined, "ENx");  // Released once it cannot become the stop string.
  TextStream u(*tokenizer_, {"END"});
  joined.clear();
  for (const std::string& p : Feed(u, "to EN")) joined += p;
  EXPECT_EQ(joined, "to ");
  EXPECT_EQ(u.Finish(), "EN");  // The output ended (EOS, length): the held-back tail is text.
  EXPECT_FALSE(u.stopped());
  EXPECT_EQ(u.text(), "to EN");
}

// A stop string spread over several tokens, and one inside a single token with text after it.
TEST_F(TextStreamTest, StopStringAcrossAndInsideTokens) {
  TextStream s(*tokenizer_, {"xyz"});
  std::string joined;
  for (char c : std::string("abxyzq")) {
    joined += *s.Add({*tokenizer_->TokenId(std::string(1, c))});
  }
  EXPECT_EQ(joined, "ab");
  EXPECT_TRUE(s.stopped());
  TextStream t(*tokenizer_, {"lo w"});
  EXPECT_EQ(*t.Add(*tokenizer_->Encode("hello world")), "hel");
  EXPECT_TRUE(t.stopped());
}

TEST_F(TextStreamTest, SpecialTokensAreNotTextAndBadIdsAreRefused) {
  TextStream s(*tokenizer_, {});
  const int32_t eos = *tokenizer_->TokenId("<|endoftext|>");
  ASSERT_TRUE(s.Add(*tokenizer_->Encode("ok")).ok());
  EXPECT_EQ(*s.Add({eos}), "");
  EXPECT_EQ(s.text(), "ok");
  EXPECT_FALSE(s.Add({1 << 30}).ok());
  EXPECT_FALSE(s.Add({-1}).ok());
  EXPECT_EQ(s.Finish(), "");
  EXPECT_EQ(*s.Add(*tokenizer_->Encode("more")), "");  // Nothing after the end.
  EXPECT_EQ(s.text(), "ok");
}

}  // namespace
}  // namespace semmoe::engine::model
