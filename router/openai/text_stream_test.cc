#include "router/openai/text_stream.h"

#include <cstdlib>
#include <string>

#include "common/file.h"
#include "engine/model/tokenizer.h"
#include "gtest/gtest.h"
#include "tools/tiny_model/tiny_model.h"

namespace semmoe::router::openai {
namespace {

class TextStreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "tiny");
    ASSERT_TRUE(tools::WriteTinyModel({.seed = 1}, dir).ok());  // Byte-level BPE.
    auto t = engine::model::Tokenizer::FromDirectory(dir);
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

  static engine::model::Tokenizer* tokenizer_;
};
engine::model::Tokenizer* TextStreamTest::tokenizer_ = nullptr;

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
  EXPECT_EQ(s.Finish(text), "");
  EXPECT_TRUE(s.consistent());
}

// Byte tokens that are not UTF-8 (a random model makes them): replaced as the engine replaces
// them in its final text, so the stream stays a prefix of that text.
TEST_F(TextStreamTest, InvalidBytesBecomeReplacementCharacters) {
  TextStream s(*tokenizer_, {});
  const int32_t ff = *tokenizer_->TokenId("\xff");  // Byte-level BPE's token for byte 0xFF.
  std::string joined = *s.Add(*tokenizer_->Encode("a"));
  joined += *s.Add({ff});
  joined += *s.Add(*tokenizer_->Encode("b"));
  EXPECT_EQ(joined,
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(s.Finish("a\xEF\xBF\xBD"
                     "b"),
            "");
  EXPECT_TRUE(s.consistent());
}

TEST_F(TextStreamTest, StopsAtAStopStringAndHoldsBackItsPrefix) {
  TextStream s(*tokenizer_, {"END", "\n\n"});
  std::string joined;
  for (const std::string& p : Feed(s, "abc EN")) joined += p;
  EXPECT_EQ(joined, "abc ");  // "EN" may start "END": held back.
  for (const std::string& p : Feed(s, "Dx more")) joined += p;
  EXPECT_EQ(joined, "abc ");  // Nothing from the stop string on.
  EXPECT_EQ(s.Finish("abc "), "");
  TextStream t(*tokenizer_, {"END"});
  joined.clear();
  for (const std::string& p : Feed(t, "ENx")) joined += p;
  EXPECT_EQ(joined, "ENx");  // Released once it cannot become the stop string.
}

TEST_F(TextStreamTest, SpecialTokensAreNotTextAndFinishSendsTheRest) {
  TextStream s(*tokenizer_, {});
  const int32_t eos = *tokenizer_->TokenId("<|endoftext|>");
  ASSERT_TRUE(s.Add(*tokenizer_->Encode("ok")).ok());
  EXPECT_EQ(*s.Add({eos}), "");
  EXPECT_EQ(s.sent(), "ok");
  EXPECT_EQ(s.Finish("ok then"), " then");
  TextStream u(*tokenizer_, {});
  ASSERT_TRUE(u.Add(*tokenizer_->Encode("abc")).ok());
  EXPECT_EQ(u.Finish("xyz"), "");  // The engine disagrees: nothing more, and it is flagged.
  EXPECT_FALSE(u.consistent());
  EXPECT_FALSE(u.Add({1 << 30}).ok());
}

}  // namespace
}  // namespace semmoe::router::openai
