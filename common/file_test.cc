#include "common/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

TEST(FileTest, OnlyRegularFilesAndPipesAreRead) {
  // A device and a directory: each refused at once, naming what it is (/dev/zero used to be read
  // until memory ran out).
  const std::pair<std::string, std::string> cases[] = {
      {"/dev/zero", "a character device"},
      {std::getenv("TEST_TMPDIR"), "a directory"},
  };
  for (const auto& [path, kind] : cases) {
    absl::StatusOr<std::string> read = ReadFile(path);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument) << path;
    EXPECT_NE(read.status().message().find(kind), std::string::npos) << read.status();
    EXPECT_NE(read.status().message().find(path), std::string::npos) << read.status();
    EXPECT_FALSE(OpenInputFile(path).ok()) << path;
  }
}

TEST(FileTest, AFifoWithNoWriterReadsAsEmptyAndDoesNotBlock) {
  const std::string fifo = JoinPath(std::getenv("TEST_TMPDIR"), "fifo");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  absl::StatusOr<std::string> read = ReadFile(fifo);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "");
}

TEST(FileTest, APipeIsReadUpToTheCap) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  ASSERT_EQ(write(fds[1], "hello", 5), 5);
  close(fds[1]);
  EXPECT_EQ(ReadFile(path).value(), "hello");
  close(fds[0]);
  // Over the cap: refused while reading (a pipe has no size to check first).
  ASSERT_EQ(pipe(fds), 0);
  const std::string again = "/proc/self/fd/" + std::to_string(fds[0]);
  ASSERT_EQ(write(fds[1], std::string(5000, 'x').data(), 5000), 5000);
  close(fds[1]);
  absl::StatusOr<std::string> big = ReadFile(again, 4096);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("holds more than 4096 bytes"), std::string::npos)
      << big.status();
  close(fds[0]);
}

TEST(FileTest, FilesOverTheCapAreRefused) {
  const std::string path = JoinPath(std::getenv("TEST_TMPDIR"), "big.txt");
  ASSERT_TRUE(WriteFile(path, std::string(1001, 'x')).ok());
  absl::StatusOr<std::string> read = ReadFile(path, 1000);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(read.status().message().find("1001 bytes; the most read is 1000"), std::string::npos)
      << read.status();
  EXPECT_EQ(ReadFile(path, 1001).value().size(), 1001u);
}

TEST(FileTest, ReadFlagFileNamesTheFlag) {
  absl::StatusOr<std::string> read = ReadFlagFile("topology", "/dev/zero");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(),
            "--topology: /dev/zero is a character device, not a regular file or a pipe");
}

TEST(FileTest, OpenInputFileGivesABlockingDescriptor) {
  const std::string path = JoinPath(std::getenv("TEST_TMPDIR"), "open.txt");
  ASSERT_TRUE(WriteFile(path, "abc").ok());
  absl::StatusOr<int> fd = OpenInputFile(path);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(fcntl(*fd, F_GETFL) & O_NONBLOCK, 0);
  char buffer[4];
  EXPECT_EQ(read(*fd, buffer, sizeof(buffer)), 3);
  close(*fd);
  EXPECT_EQ(OpenInputFile("/nonexistent/semmoe/file").status().code(), absl::StatusCode::kNotFound);
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
