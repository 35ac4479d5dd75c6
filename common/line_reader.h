// Reads a regular file line by line through a fixed buffer, with a cap on one line's length, so
// that a file of one endless line (or a device passed by mistake) is an error, not a host out of
// memory. For the line-oriented inputs named by flags (JSONL batches, prompt lists).
#ifndef SEMMOE_COMMON_LINE_READER_H_
#define SEMMOE_COMMON_LINE_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace semmoe {

// The longest line read by default: far above a real JSONL request (a 128k-token prompt as
// JSON is about 1 MB).
inline constexpr size_t kMaxLineBytes = size_t{64} << 20;

class LineReader {
 public:
  // Opens `path` (a regular file, common/file.h's OpenInputFile errors).
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path,
                                                          size_t max_line_bytes = kMaxLineBytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line into `line`, without its '\n'; false at the end of the file. A last line
  // without '\n' is returned. InvalidArgument naming the path and line number for a line over
  // the cap, Internal for a read error.
  absl::StatusOr<bool> Next(std::string& line);
  // The number of the line last returned (1-based).
  int64_t line_number() const { return line_number_; }

 private:
  LineReader(std::string path, int fd, size_t max_line_bytes)
      : path_(std::move(path)), fd_(fd), max_line_bytes_(max_line_bytes) {}
  absl::Status Fill();

  std::string path_;
  int fd_;
  size_t max_line_bytes_;
  std::string buffer_;
  size_t start_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
};

}  // namespace semmoe

#endif  // SEMMOE_COMMON_LINE_READER_H_
