// TraceWriter: streams a routing trace (trace_format.h) to a file.
//
// Records go to `<path>.partial` through a buffer; Close() writes the end record, flushes,
// fsyncs and renames to `path`, so a reader never sees a half-written trace under the final
// name. Destroying an unclosed writer removes the partial file.
//
// Thread-safety: not thread-safe.
#ifndef SEMMOE_PLANNER_TRACE_TRACE_WRITER_H_
#define SEMMOE_PLANNER_TRACE_TRACE_WRITER_H_

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "planner/trace/trace_format.h"

namespace semmoe::planner::trace {

class TraceWriter {
 public:
  // InvalidArgument for an inconsistent header (no layers, top_k 0 or > num_experts, more than
  // 65536 experts).
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Create(const std::string& path,
                                                             const TraceHeader& header);
  ~TraceWriter();

  // Declares a request; returns its number for AddToken.
  absl::StatusOr<uint64_t> AddRequest(absl::string_view name);
  // `experts`/`weights`: [L × K] as in the header (weights ignored without has_weights).
  absl::Status AddToken(uint64_t request, uint32_t position, uint32_t token,
                        absl::Span<const int32_t> experts, absl::Span<const float> weights);
  absl::Status Close();

  uint64_t num_tokens() const { return num_tokens_; }

 private:
  TraceWriter(std::string path, TraceHeader header, std::FILE* file)
      : path_(std::move(path)), header_(std::move(header)), file_(file) {}
  absl::Status Write(const void* data, size_t bytes);

  std::string path_;
  TraceHeader header_;
  std::FILE* file_;
  uint64_t num_requests_ = 0;
  uint64_t num_tokens_ = 0;
  std::string record_;
};

}  // namespace semmoe::planner::trace

#endif  // SEMMOE_PLANNER_TRACE_TRACE_WRITER_H_
