// TraceSet: a whole routing trace in memory, grouped by request, for the planner's statistics,
// solver and evaluation.
#ifndef SEMMOE_PLANNER_TRACE_TRACE_SET_H_
#define SEMMOE_PLANNER_TRACE_TRACE_SET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/trace/trace_format.h"

namespace semmoe::planner::trace {

struct TraceSet {
  TraceHeader header;
  std::vector<std::string> request_names;
  // Request r's tokens are [request_begin[r], request_begin[r + 1]) in trace order.
  std::vector<int64_t> request_begin{0};
  std::vector<uint32_t> tokens;   // [T] token ids.
  std::vector<uint16_t> experts;  // [T, L, K] chosen experts.

  int num_layers() const { return header.num_moe_layers(); }
  int top_k() const { return header.top_k; }
  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int num_requests() const { return static_cast<int>(request_names.size()); }
  // The K experts token `t` chose at MoE layer `layer`.
  const uint16_t* Experts(int64_t t, int layer) const {
    return experts.data() + (t * num_layers() + layer) * top_k();
  }
  // Appends a request; `experts` holds [tokens.size(), L, K] ids (checked against the header).
  absl::Status AddRequest(std::string name, const std::vector<uint32_t>& request_tokens,
                          const std::vector<uint16_t>& request_experts);
  // Appends request `r` of `from` (same layers and top-k; checked like AddRequest).
  absl::Status CopyRequest(const TraceSet& from, int r);
};

// Reads a trace file (trace_format.h) fully. Tokens are grouped by request in order of first
// appearance; a request's tokens keep their file order.
absl::StatusOr<TraceSet> LoadTraceSet(const std::string& path);

}  // namespace semmoe::planner::trace

#endif  // SEMMOE_PLANNER_TRACE_TRACE_SET_H_
