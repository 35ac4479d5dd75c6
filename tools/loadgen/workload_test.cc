#include "tools/loadgen/workload.h"

#include <random>
#include <string>

#include "common/file.h"
#include "gtest/gtest.h"

namespace semmoe::tools {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = JoinPath(std::getenv("TEST_TMPDIR"), name);
  EXPECT_TRUE(WriteFile(path, text).ok());
  return path;
}

TEST(WorkloadTest, TextByDefaultIdsWhenAskedOrAlone) {
  const std::string path = Write("w.jsonl",
                                 "{\"id\": 1, \"text\": \"héllo world\", \"token_ids\": [5, 6]}\n"
                                 "\n"
                                 "{\"token_ids\": [7]}\n");
  auto p = LoadPrompts(path);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[0].text, "héllo world");
  EXPECT_EQ((*p)[1].token_ids, std::vector<int32_t>{7});
  p = LoadPrompts(path, {.prefer_token_ids = true});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)[0].token_ids, (std::vector<int32_t>{5, 6}));
  // Cutting never splits a UTF-8 sequence ("é" is 2 bytes at offsets 1–2).
  p = LoadPrompts(path, {.max_prompts = 1, .max_prompt_chars = 2});
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->size(), 1u);
  EXPECT_EQ((*p)[0].text, "h");
}

TEST(WorkloadTest, BadFilesNameTheLine) {
  const struct {
    std::string text, message;
  } cases[] = {
      {"{\"text\": \"ok\"}\nnot json\n", "w2.jsonl:2"},
      {"{\"id\": 3}\n", "needs a non-empty \"text\" or a \"token_ids\" list"},
      {"{\"token_ids\": [1, -2]}\n", "not a token id"},
      {"{\"token_ids\": \"1 2\"}\n", "must be a non-empty list"},
      {"", "no prompts"},
  };
  for (const auto& c : cases) {
    auto p = LoadPrompts(Write("w2.jsonl", c.text));
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_NE(p.status().message().find(c.message), std::string::npos) << p.status();
  }
  EXPECT_FALSE(LoadPrompts(JoinPath(std::getenv("TEST_TMPDIR"), "missing.jsonl")).ok());
}

TEST(WorkloadTest, CorruptedFilesNeverCrash) {
  const std::string good =
      "{\"text\": \"a b c\", \"token_ids\": [1, 2, 3]}\n{\"text\": \"d\"}\n{\"token_ids\": [4]}\n";
  std::mt19937 rng(3);
  for (int trial = 0; trial < 500; ++trial) {
    std::string bad = good;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
      bad[rng() % bad.size()] = static_cast<char>(rng() % 256);
    }
    auto p = LoadPrompts(Write("fuzz.jsonl", bad), {.prefer_token_ids = trial % 2 == 0});
    if (p.ok()) {
      for (const Prompt& prompt : *p)
        EXPECT_TRUE(!prompt.text.empty() || !prompt.token_ids.empty());
    }
  }
}

}  // namespace
}  // namespace semmoe::tools
