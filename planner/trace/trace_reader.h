// TraceReader: streams a routing trace (trace_format.h) from a file, record by record, with
// every field validated: a truncated file, an unknown record kind, an expert id out of range, a
// token of an undeclared request or a wrong end count is an InvalidArgument naming the byte
// offset — never a crash or an unbounded allocation.
//
// Thread-safety: not thread-safe.
#ifndef SEMMOE_PLANNER_TRACE_TRACE_READER_H_
#define SEMMOE_PLANNER_TRACE_TRACE_READER_H_

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/trace/trace_format.h"

namespace semmoe::planner::trace {

class TraceReader {
 public:
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path);
  ~TraceReader();

  const TraceHeader& header() const { return header_; }

  // Reads the next token record into `token` (request records are consumed on the way).
  // Returns false after a valid end record.
  absl::StatusOr<bool> Next(TraceToken& token);

  // Name of a declared request (REQUIRES: request < num_requests()).
  const std::string& RequestName(uint64_t request) const { return names_[request]; }
  uint64_t num_requests() const { return names_.size(); }

 private:
  TraceReader(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  absl::Status ReadHeader();
  absl::Status Read(void* data, size_t bytes, const char* what);
  absl::Status Corrupt(const std::string& what) const;

  std::string path_;
  std::FILE* file_;
  uint64_t offset_ = 0;
  TraceHeader header_;
  std::vector<std::string> names_;
  uint64_t tokens_read_ = 0;
  bool ended_ = false;
  std::vector<uint16_t> f16_;
};

}  // namespace semmoe::planner::trace

#endif  // SEMMOE_PLANNER_TRACE_TRACE_READER_H_
