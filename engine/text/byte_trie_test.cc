#include "engine/text/byte_trie.h"

#include "gtest/gtest.h"

namespace semmoe::engine::model {
namespace {

using Matches = std::vector<std::pair<size_t, int32_t>>;

TEST(ByteTrieTest, EveryKeyAtAPositionShortestFirst) {
  ByteTrie t;
  t.Add("<|im", 0);
  t.Add("<|im_end|>", 1);
  t.Add("<|im_start|>", 2);
  t.Add("<|im", 9);  // A key added twice keeps its first value.
  t.Add("", 5);      // Ignored.
  Matches m;
  t.Matches("x<|im_end|>y", 1, m);
  EXPECT_EQ(m, (Matches{{4, 0}, {10, 1}}));
  t.Matches("x<|im_end|>y", 0, m);
  EXPECT_TRUE(m.empty());
  t.Matches("<|im_sta", 0, m);  // A key's prefix at the end of the text: only the short key.
  EXPECT_EQ(m, (Matches{{4, 0}}));
  EXPECT_TRUE(t.Starts('<'));
  EXPECT_FALSE(t.Starts('x'));
}

}  // namespace
}  // namespace semmoe::engine::model
