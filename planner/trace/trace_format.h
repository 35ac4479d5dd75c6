// Routing traces: which experts every token chose at every MoE layer. The engine writes them
// (`engine trace`), the planner reads them to learn token→expert affinity.
//
// Binary format, version 1 (all integers little-endian):
//
//   header   magic "SMTRACE\0" (8 bytes) | u32 version = 1 | u32 header_bytes (total, incl. the
//            layer list and padding) | u32 num_experts | u32 vocab_size | u16 num_moe_layers L |
//            u16 top_k K | u32 flags (bit 0: gate weights present) |
//            u16 moe_layer_index[L] (model layer of each MoE layer) | zero padding to 8 bytes
//   records  one byte kind, then:
//            1 request  u64 request | u32 name_bytes (≤ 4096) | name (UTF-8, e.g. the prompt id)
//            2 token    u64 request | u32 position | u32 token_id | u16 expert[L × K] |
//                       f16 weight[L × K] if flag bit 0
//                       (per MoE layer in header order, the top-k experts in descending router
//                       probability, and the weights the model applied)
//            3 end      u64 num_requests | u64 num_tokens (must match the records before it)
//
// A token record may only name a request declared before it. A file without the end record is
// truncated (a writer that died); readers report it as an error after the last whole record.
// Version 1 readers refuse other versions; header_bytes lets later versions add header fields.
#ifndef SEMMOE_PLANNER_TRACE_TRACE_FORMAT_H_
#define SEMMOE_PLANNER_TRACE_TRACE_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace semmoe::planner::trace {

inline constexpr char kTraceMagic[8] = {'S', 'M', 'T', 'R', 'A', 'C', 'E', '\0'};
inline constexpr uint32_t kTraceVersion = 1;
inline constexpr uint32_t kMaxRequestNameBytes = 4096;
inline constexpr uint8_t kRecordRequest = 1;
inline constexpr uint8_t kRecordToken = 2;
inline constexpr uint8_t kRecordEnd = 3;

struct TraceHeader {
  uint32_t num_experts = 0;
  uint32_t vocab_size = 0;
  uint16_t top_k = 0;
  bool has_weights = true;
  std::vector<uint16_t> moe_layers;  // Model layer index of each traced MoE layer.
  int num_moe_layers() const { return static_cast<int>(moe_layers.size()); }
};

struct TraceToken {
  uint64_t request = 0;
  uint32_t position = 0;
  uint32_t token = 0;
  std::vector<uint16_t> experts;  // [L × K]
  std::vector<float> weights;     // [L × K], empty without weights.
};

}  // namespace semmoe::planner::trace

#endif  // SEMMOE_PLANNER_TRACE_TRACE_FORMAT_H_
