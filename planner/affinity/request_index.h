// RequestIndex: the profile's requests as TF-IDF vectors of their tokens, each labelled with the
// device the DP co-schedule gave it. A new request goes where its nearest profile requests went
// (cosine similarity, the top K voting with their similarity): requests with similar text use
// similar experts, and the co-schedule placed exactly those experts together. On the shared
// model this reproduces the co-schedule better than per-token scores (docs/PLANNER.md).
//
// Immutable after construction; thread-safe.
#ifndef SEMMOE_PLANNER_AFFINITY_REQUEST_INDEX_H_
#define SEMMOE_PLANNER_AFFINITY_REQUEST_INDEX_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "planner/trace/trace_set.h"

namespace semmoe::planner {

class RequestIndex {
 public:
  // `request_device`: one device in [0, num_devices) per request of `trace`.
  static absl::StatusOr<RequestIndex> Build(const trace::TraceSet& trace,
                                            const std::vector<int>& request_device,
                                            int num_devices);

  int num_devices() const { return num_devices_; }
  int num_requests() const { return static_cast<int>(devices_.size()); }

  // Per device, the summed similarity of the `k` most similar indexed requests that went there.
  std::vector<double> Vote(absl::Span<const uint32_t> prompt, int k) const;

  // "SMRQIDX1" | u32 devices | u32 idf entries | (u32 token, f32 idf)… | u32 requests |
  // per request: u16 device, u32 n, n × (u32 token, f32 weight).
  std::string Serialize() const;
  // InvalidArgument naming the byte offset for anything malformed (never a crash).
  static absl::StatusOr<RequestIndex> Deserialize(absl::string_view bytes);

 private:
  using SparseVector = std::vector<std::pair<uint32_t, float>>;  // Sorted by token.
  SparseVector Embed(absl::Span<const uint32_t> tokens) const;

  int num_devices_ = 0;
  absl::flat_hash_map<uint32_t, float> idf_;
  std::vector<SparseVector> vectors_;
  std::vector<int> devices_;
};

// The router's kNN rule: requests in order, each to the device its neighbours vote for most among
// devices with token capacity left ((1 + eps) · mean load); if none has room, the least loaded.
std::vector<int> KnnRequests(const std::vector<std::vector<uint32_t>>& prompts,
                             const RequestIndex& index, int k, double token_balance_eps = 0.05);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AFFINITY_REQUEST_INDEX_H_
