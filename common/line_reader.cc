#include "common/line_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/file.h"

namespace semmoe {
namespace {
constexpr size_t kChunk = size_t{1} << 16;
}  // namespace

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path,
                                                             size_t max_line_bytes) {
  absl::StatusOr<int> fd = OpenInputFile(path);
  if (!fd.ok()) return fd.status();
  return std::unique_ptr<LineReader>(new LineReader(path, *fd, max_line_bytes));
}

LineReader::~LineReader() { close(fd_); }

absl::Status LineReader::Fill() {
  if (start_ > 0) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  const size_t old = buffer_.size();
  buffer_.resize(old + kChunk);
  while (true) {
    const ssize_t n = read(fd_, buffer_.data() + old, kChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      buffer_.resize(old);
      return absl::InternalError(absl::StrCat("cannot read ", path_, ": ", std::strerror(err)));
    }
    buffer_.resize(old + static_cast<size_t>(n));
    if (n == 0) eof_ = true;
    return absl::OkStatus();
  }
}

absl::StatusOr<bool> LineReader::Next(std::string& line) {
  size_t searched = start_;
  while (true) {
    const size_t newline = buffer_.find('\n', searched);
    if (newline != std::string::npos) {
      if (newline - start_ > max_line_bytes_) break;
      line.assign(buffer_, start_, newline - start_);
      start_ = newline + 1;
      ++line_number_;
      return true;
    }
    if (buffer_.size() - start_ > max_line_bytes_) break;
    if (eof_) {
      if (start_ == buffer_.size()) return false;
      line.assign(buffer_, start_, std::string::npos);
      start_ = buffer_.size();
      ++line_number_;
      return true;
    }
    searched = buffer_.size() - start_;  // Fill() moves the unread bytes to the front.
    if (absl::Status filled = Fill(); !filled.ok()) return filled;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path_, ":", line_number_ + 1, ": a line longer than ", max_line_bytes_, " bytes"));
}

}  // namespace semmoe
