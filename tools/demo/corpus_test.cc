#include "tools/demo/corpus.h"

#include <filesystem>

#include "common/file.h"
#include "gtest/gtest.h"

namespace semmoe::tools {
namespace {

TEST(CorpusTest, ChunksTextFilesFromEachRootInTurn) {
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "corpus");
  std::filesystem::create_directories(dir + "/a/sub");
  std::filesystem::create_directories(dir + "/b");
  ASSERT_TRUE(WriteFile(dir + "/a/sub/one.txt", "alpha line one\nalpha line two\n").ok());
  ASSERT_TRUE(WriteFile(dir + "/a/binary.bin", std::string("x\0y", 3)).ok());
  ASSERT_TRUE(WriteFile(dir + "/b/two.h", "#define B 1\n").ok());
  auto p = CollectPrompts({dir + "/a", dir + "/b", dir + "/missing"}, 10, 16);
  ASSERT_TRUE(p.ok()) << p.status();
  // a's chunks (cut at a line end near 16 characters) alternate with b's.
  EXPECT_EQ(*p,
            (std::vector<std::string>{"alpha line one\n", "#define B 1\n", "alpha line two\n"}));
  p = CollectPrompts({dir + "/a", dir + "/b"}, 2, 16);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->size(), 2u);
  EXPECT_FALSE(CollectPrompts({dir + "/missing"}, 10, 16).ok());
}

}  // namespace
}  // namespace semmoe::tools
