// DecodeGraphs<Ops>: a decode step's device work replayed as one CUDA graph per batch bucket
// (ForwardRunner with decode graphs on: pure decode steps padded to a power of two,
// batch_layout.h), so that a small step costs one launch instead of hundreds. What a graph replays
// is fixed at capture: the kernels, their shapes and the memory they touch. So a bucket's first
// step runs eagerly (it sizes every buffer, cuBLAS picks its kernels), the second is captured and
// replayed, and later ones replay; a bucket is captured again when the pass's buffers have moved (a
// larger prefill grew one, or the Ops' own scratch) — `signature` is their addresses (and the Ops'
// scratch generation). The body must queue device work only: no
// host sync, no allocation. With Ops that have no graphs (the CPU emulation) every step runs
// eagerly, over the same padded shapes.
#ifndef SEMMOE_ENGINE_FORWARD_DECODE_GRAPHS_H_
#define SEMMOE_ENGINE_FORWARD_DECODE_GRAPHS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "common/status_macros.h"

namespace semmoe::engine::forward {

// Ops with graphs provide `static constexpr bool kGraphs = true` and BeginCapture(),
// EndCapture(int key) (instantiates, replacing key's older graph) and Replay(int key).
template <typename Ops, typename = void>
struct OpsHaveGraphs : std::false_type {};
template <typename Ops>
struct OpsHaveGraphs<Ops, std::enable_if_t<Ops::kGraphs>> : std::true_type {};

template <typename Ops>
class DecodeGraphs {
 public:
  explicit DecodeGraphs(Ops& ops) : ops_(ops) {}

  absl::Status Run(int bucket, const std::vector<uintptr_t>& signature,
                   const std::function<absl::Status()>& body) {
    if constexpr (!OpsHaveGraphs<Ops>::value) {
      ++eager_;
      return body();
    } else {
      Bucket& b = buckets_[bucket];
      if (b.captured && b.signature == signature) {
        ++replays_;
        return ops_.Replay(bucket);
      }
      if (!b.warm || b.signature != signature) {
        b.warm = true;
        b.captured = false;
        b.signature = signature;
        ++eager_;
        return body();
      }
      RETURN_IF_ERROR(ops_.BeginCapture());
      const absl::Status captured = body();
      const absl::Status ended = ops_.EndCapture(bucket);  // Even when the body failed.
      RETURN_IF_ERROR(captured);
      RETURN_IF_ERROR(ended);
      b.captured = true;
      ++captures_;
      ++replays_;
      return ops_.Replay(bucket);
    }
  }

  int64_t eager() const { return eager_; }
  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }

 private:
  struct Bucket {
    bool warm = false, captured = false;
    std::vector<uintptr_t> signature;
  };
  Ops& ops_;
  std::map<int, Bucket> buckets_;
  int64_t eager_ = 0, captures_ = 0, replays_ = 0;
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_DECODE_GRAPHS_H_
