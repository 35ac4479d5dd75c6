#include "common/file.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace semmoe {
namespace {

TEST(FileTest, WriteThenReadRoundTrips) {
  std::string path = JoinPath(std::getenv("TEST_TMPDIR"), "round_trip.bin");
  std::string data("a\0b\xff", 4);
  ASSERT_TRUE(WriteFileAtomically(path, data).ok());
  auto read = ReadFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, data);
}

TEST(FileTest, BaseNameIgnoresTrailingSlashes) {
  EXPECT_EQ(BaseName("a/models/tiny-qwen3-moe/"), "tiny-qwen3-moe");
  EXPECT_EQ(BaseName("/x/m"), "m");
  EXPECT_EQ(BaseName("m"), "m");
  EXPECT_EQ(BaseName("/"), "");  // The root has no name.
}

TEST(FileTest, WriteFileTruncates) {
  std::string path = JoinPath(std::getenv("TEST_TMPDIR"), "scratch.bin");
  ASSERT_TRUE(WriteFile(path, "longer contents").ok());
  ASSERT_TRUE(WriteFile(path, "short").ok());
  EXPECT_EQ(*ReadFile(path), "short");
  EXPECT_FALSE(WriteFile("/nonexistent/semmoe/out", "x").ok());
}

TEST(FileTest, MissingFileIsNotFoundAndNamesThePath) {
  auto read = ReadFile("/nonexistent/semmoe/file");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(read.status().message().find("/nonexistent/semmoe/file"), std::string::npos);
}

TEST(FileTest, WriteIntoMissingDirectoryFails) {
  EXPECT_FALSE(WriteFileAtomically("/nonexistent/semmoe/out", "x").ok());
}

TEST(FileTest, JoinPath) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("a", "/b"), "/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
}

}  // namespace
}  // namespace semmoe
