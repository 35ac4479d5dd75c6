// Imports a routing trace stored as flat arrays — the layout of the shared models'
// `reference/trace/` directories:
//   index.json   {"num_layers", "num_experts", "top_k",
//                 "prompts": [{"index", "n_tokens", "token_offset", "doc_id"?}, ...]}
//   tokens.u16   uint16 [total_tokens] token ids, prompts concatenated
//   topk_ids.u8  uint8 [total_tokens, layers, k] chosen experts
// Every size and id is checked; a mismatch is an InvalidArgument naming the file.
#ifndef SEMMOE_PLANNER_TRACE_ARRAY_TRACE_H_
#define SEMMOE_PLANNER_TRACE_ARRAY_TRACE_H_

#include <string>

#include "absl/status/statusor.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner::trace {

absl::StatusOr<TraceSet> ImportArrayTrace(const std::string& dir);

}  // namespace semmoe::planner::trace

#endif  // SEMMOE_PLANNER_TRACE_ARRAY_TRACE_H_
