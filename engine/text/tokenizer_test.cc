#include "engine/text/tokenizer.h"

#include <random>
#include <string>

#include "engine/text/pretokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// GPT-2 byte-level alphabet, as tokenizer.json files spell bytes.
std::string ByteChar(int b) {
  int cp = b;
  if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE))) {
    int n = 0;
    for (int x = 0; x < b; ++x) {
      if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) ++n;
    }
    cp = 256 + n;
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// A tokenizer with the 256 byte tokens (id = byte), merges "h e"→256, "l l"→257, "he ll"→258,
// "Ġ w"→259, and two added tokens.
nlohmann::json TinyTokenizer(bool pair_merges) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[ByteChar(b)] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  vocab["Ġw"] = 259;
  nlohmann::json merges = nlohmann::json::array();
  for (auto [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"Ġ", "w"}}) {
    if (pair_merges) {
      merges.push_back({a, b});
    } else {
      merges.push_back(a + " " + b);
    }
  }
  nlohmann::json pattern = {{"Regex", std::string(kQwen2PretokenizerPattern)}};
  return {
      {"version", "1.0"},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", pattern}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"vocab", vocab}, {"merges", merges}}},
      {"added_tokens",
       {{{"id", 260}, {"content", "<|end|>"}, {"special", true}},
        {{"id", 261}, {"content", "<|end|>x"}, {"special", false}}}},
  };
}

std::unique_ptr<Tokenizer> Load(const nlohmann::json& j) {
  auto t = Tokenizer::FromJson(j.dump());
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(TokenizerTest, MergesApplyInRankOrderInBothFormats) {
  for (bool pairs : {false, true}) {
    auto t = Load(TinyTokenizer(pairs));
    ASSERT_NE(t, nullptr);
    EXPECT_THAT(*t->Encode("hello"), ElementsAre(258, 'o'));
    EXPECT_THAT(*t->Encode("hello world"), ElementsAre(258, 'o', 259, 'o', 'r', 'l', 'd'));
    EXPECT_EQ(t->vocab_size(), 262);
  }
}

TEST(TokenizerTest, AddedTokensLongestFirstAndOptional) {
  auto t = Load(TinyTokenizer(false));
  EXPECT_THAT(*t->Encode("he<|end|>x<|end|>"), ElementsAre(256, 261, 260));
  Tokenizer::EncodeOptions plain{.parse_special = false};
  EXPECT_EQ(t->Encode("<|end|>", plain)->size(), 7u);  // Seven bytes, no merges apply.
  EXPECT_TRUE(t->IsSpecial(260));
  EXPECT_FALSE(t->IsSpecial(261));
  EXPECT_EQ(*t->Decode({256, 260, 'o'}, /*skip_special=*/true), "heo");
  EXPECT_EQ(*t->Decode({256, 260, 'o'}), "he<|end|>o");
}

// Literal spans: a special token's text there is text (7 bytes); outside, and for a non-special
// added token anywhere, it is the token.
TEST(TokenizerTest, SpecialTokensInLiteralSpansAreText) {
  auto t = Load(TinyTokenizer(false));
  // "<|end|>" at 0 (literal), "<|end|>" at 7 (control), "<|end|>x" at 14 (literal but not
  // special: still its token).
  const std::string text = "<|end|><|end|><|end|>x";
  Tokenizer::EncodeOptions o{.literal_spans = {{0, 7}, {14, 22}}};
  absl::StatusOr<std::vector<int32_t>> ids = t->Encode(text, o);
  ASSERT_TRUE(ids.ok()) << ids.status();
  std::vector<int32_t> want = *t->Encode("<|end|>", {.parse_special = false});
  want.push_back(260);
  want.push_back(261);
  EXPECT_EQ(*ids, want);
  // A span that covers only part of a special token's text still makes it text.
  ids = t->Encode("a<|end|>", {.literal_spans = {{3, 4}}});
  EXPECT_EQ(ids->size(), 8u);
  EXPECT_EQ(t->SpecialTokenTexts(), std::vector<std::string>{"<|end|>"});
  for (const std::vector<std::pair<size_t, size_t>>& bad :
       std::vector<std::vector<std::pair<size_t, size_t>>>{
           {{5, 2}}, {{0, 99}}, {{4, 8}, {0, 2}}, {{0, 5}, {4, 8}}}) {
    EXPECT_EQ(t->Encode(text, {.literal_spans = bad}).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(TokenizerTest, EdgeCases) {
  auto t = Load(TinyTokenizer(false));
  EXPECT_TRUE(t->Encode("")->empty());
  for (const std::string& text :
       {std::string("   \n\n\t  x  "), std::string("你好，世界"), std::string("👋🏽🇩🇪"),
        std::string("1234567890"), std::string("e\u0301")}) {
    auto ids = t->Encode(text);
    ASSERT_TRUE(ids.ok()) << text;
    auto back = t->Decode(*ids);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, text == "e\u0301" ? "\u00e9" : text);  // NFC applies before BPE.
  }
  EXPECT_EQ(t->Encode("1234")->size(), 4u);
}

TEST(TokenizerTest, InvalidUtf8IsAnError) {
  auto t = Load(TinyTokenizer(false));
  auto ids = t->Encode(std::string("ok \xff\xfe"));
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ids.status().message()), HasSubstr("invalid UTF-8 at byte 3"));
}

TEST(TokenizerTest, DecodeRejectsUnknownIds) {
  auto t = Load(TinyTokenizer(false));
  EXPECT_FALSE(t->Decode({5000}).ok());
  EXPECT_FALSE(t->Decode({-1}).ok());
}

TEST(TokenizerTest, BadFilesAreClearErrors) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string error;
  };
  std::vector<Case> cases = {
      {[](nlohmann::json& j) { j["model"]["type"] = "Unigram"; }, "model type 'Unigram'"},
      {[](nlohmann::json& j) {
         j["normalizer"] = {{"type", "NFKC"}};
       },
       "normalizer 'NFKC'"},
      {[](nlohmann::json& j) {
         j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
       },
       "not the Qwen2 pattern"},
      {[](nlohmann::json& j) { j["model"]["merges"].push_back("q z"); },
       "uses a token that is not in the vocabulary"},
      {[](nlohmann::json& j) { j["model"]["merges"].push_back("qz"); }, "is not \"left right\""},
      {[](nlohmann::json& j) { j["model"]["merges"].push_back(7); }, "expected \"a b\""},
      {[](nlohmann::json& j) { j["model"]["vocab"].erase("a"); }, "no token for byte 0x61"},
      {[](nlohmann::json& j) { j["model"]["vocab"]["x"] = -3; }, "expected an id"},
      {[](nlohmann::json& j) { j["model"]["vocab"]["\u4f60"] = 300; }, "outside the byte-level"},
      {[](nlohmann::json& j) { j["model"]["vocab"]["zz"] = 5; }, "id 5 is used twice"},
      {[](nlohmann::json& j) { j["added_tokens"][0]["lstrip"] = true; }, "lstrip is not supported"},
      {[](nlohmann::json& j) { j["model"]["byte_fallback"] = true; }, "byte_fallback"},
      {[](nlohmann::json& j) { j.erase("model"); }, "missing 'model'"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = TinyTokenizer(false);
    c.edit(j);
    auto t = Tokenizer::FromJson(j.dump());
    ASSERT_FALSE(t.ok()) << c.error;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.error));
  }
  EXPECT_THAT(std::string(Tokenizer::FromJson("{\"model\": ").status().message()),
              HasSubstr("invalid JSON"));
  EXPECT_EQ(Tokenizer::FromDirectory("/nonexistent").status().code(), absl::StatusCode::kNotFound);
}

// Fuzz-style: random byte edits and truncations of a valid tokenizer.json, and structurally
// wrong values in each field, must give a Status — never an exception, crash or hang.
TEST(TokenizerFuzzTest, CorruptedFilesNeverCrash) {
  const std::string good = TinyTokenizer(false).dump();
  std::mt19937 rng(11);
  int rejected = 0;
  for (int iter = 0; iter < 600; ++iter) {
    std::string text = good;
    for (int e = 0, edits = 1 + rng() % 3; e < edits; ++e) {
      if (rng() % 4 == 0) {
        text.resize(rng() % (text.size() + 1));
      } else if (!text.empty()) {
        text[rng() % text.size()] = "{}[]\":,0a\\ "[rng() % 11];
      }
    }
    auto t = Tokenizer::FromJson(text);
    if (!t.ok()) {
      ++rejected;
      continue;
    }
    (void)(*t)->Encode("hello <|end|> world");
  }
  EXPECT_GT(rejected, 300);
  // Every field replaced by a value of each wrong JSON type.
  const std::vector<nlohmann::json> wrong = {nullptr,
                                             1,
                                             -1,
                                             2.5,
                                             true,
                                             "x",
                                             nlohmann::json::array(),
                                             nlohmann::json::object(),
                                             {1, 2},
                                             {{"type", 3}}};
  const std::vector<std::vector<std::string>> paths = {{"normalizer"},
                                                       {"normalizer", "type"},
                                                       {"pre_tokenizer"},
                                                       {"pre_tokenizer", "type"},
                                                       {"pre_tokenizer", "pretokenizers"},
                                                       {"model"},
                                                       {"model", "type"},
                                                       {"model", "vocab"},
                                                       {"model", "merges"},
                                                       {"model", "dropout"},
                                                       {"added_tokens"},
                                                       {"model", "byte_fallback"}};
  for (const auto& path : paths) {
    for (const auto& value : wrong) {
      nlohmann::json j = TinyTokenizer(false);
      nlohmann::json* at = &j;
      for (size_t i = 0; i + 1 < path.size(); ++i) at = &(*at)[path[i]];
      (*at)[path.back()] = value;
      auto t = Tokenizer::FromJson(j.dump());  // Must return, OK or not.
      if (t.ok()) (void)(*t)->Encode("abc");
    }
  }
  nlohmann::json j = TinyTokenizer(false);
  j["pre_tokenizer"]["pretokenizers"][0] = {{"type", 5}, {"pattern", {{"Regex", 7}}}};
  EXPECT_FALSE(Tokenizer::FromJson(j.dump()).ok());
  j = TinyTokenizer(false);
  j["added_tokens"][0] = {{"id", "x"}, {"content", 5}};
  EXPECT_FALSE(Tokenizer::FromJson(j.dump()).ok());
}

}  // namespace
}  // namespace semmoe::engine::model
