#include "common/line_reader.h"

#include <cstdlib>
#include <vector>

#include "common/file.h"
#include "gtest/gtest.h"

namespace semmoe {
namespace {

std::string Temp(const std::string& name) { return JoinPath(std::getenv("TEST_TMPDIR"), name); }

std::vector<std::string> AllLines(LineReader& reader) {
  std::vector<std::string> lines;
  std::string line;
  while (true) {
    absl::StatusOr<bool> more = reader.Next(line);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return lines;
    lines.push_back(line);
  }
}

TEST(LineReaderTest, ReadsEveryLineAcrossBufferBoundaries) {
  // Lines of every length around the 64 KiB chunk, a last line without '\n', and empty lines.
  std::vector<std::string> want = {
      "", "a",  std::string(65535, 'b'), std::string(65536, 'c'), std::string(200000, 'd'),
      "", "end"};
  std::string text;
  for (size_t i = 0; i < want.size(); ++i) {
    text += want[i];
    if (i + 1 < want.size()) text += '\n';
  }
  ASSERT_TRUE(WriteFile(Temp("lines.txt"), text).ok());
  absl::StatusOr<std::unique_ptr<LineReader>> reader = LineReader::Open(Temp("lines.txt"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(AllLines(**reader), want);
  EXPECT_EQ((*reader)->line_number(), 7);
}

TEST(LineReaderTest, ALineOverTheCapIsAnErrorNamingIt) {
  ASSERT_TRUE(WriteFile(Temp("long.txt"), "short\n" + std::string(300000, 'x') + "\nafter\n").ok());
  absl::StatusOr<std::unique_ptr<LineReader>> reader = LineReader::Open(Temp("long.txt"), 100000);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string line;
  ASSERT_TRUE((*reader)->Next(line).value());
  EXPECT_EQ(line, "short");
  absl::StatusOr<bool> more = (*reader)->Next(line);
  EXPECT_EQ(more.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(more.status().message().find("long.txt:2: a line longer than 100000 bytes"),
            std::string::npos)
      << more.status();
  // Exactly at the cap is allowed, with or without a final newline.
  ASSERT_TRUE(
      WriteFile(Temp("cap.txt"), std::string(1000, 'y') + "\n" + std::string(1000, 'z')).ok());
  reader = LineReader::Open(Temp("cap.txt"), 1000);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(AllLines(**reader).size(), 2u);
}

TEST(LineReaderTest, DevicesAndMissingFilesAreRefused) {
  EXPECT_EQ(LineReader::Open("/dev/zero").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LineReader::Open("/nonexistent/x.jsonl").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace semmoe
