// CpuOps: the CPU op set of ForwardRunner (engine/forward/forward_runner.h): each operation the
// CPU reference of the CUDA kernel CudaOps launches (kernels/cpu), Eigen for the products. So
// ForwardRunner<CpuOps> runs the GPU's exact sequence of operations in CI, and it is the CPU
// product's forward (CpuForward; its speed: docs/PERFORMANCE.md, tools/bench_forward):
// f32 products of ≤ 16 rows unpacked (kernels/cpu/small_gemm, reading LinearView::exact16 when
// set), and attention over an f32 cache as products over a sequence's context — per head for a
// run of > 4 new tokens, per KV head's group of ≥ 4 query heads for a decode step (smaller groups
// and a bf16 cache, the GPU's, through the kernel's reference token by token).
// In builds without NDEBUG (the tests') fresh float buffers are NaN, so reading memory the pass
// never wrote shows in the logits; optimised builds leave them unfilled.
#ifndef SEMMOE_ENGINE_FORWARD_CPU_OPS_H_
#define SEMMOE_ENGINE_FORWARD_CPU_OPS_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "absl/status/status.h"
#include "engine/forward/model_view.h"
#include "kernels/op_args.h"

namespace semmoe::engine::forward {

class CpuOps {
 public:
  template <typename T>
  class Array {
   public:
    // Grows by half at least, so that passes of slowly growing sizes reallocate rarely.
    absl::Status Reserve(int64_t n) {
      if (n <= size_) return absl::OkStatus();
      const int64_t capacity = std::max(n, size_ + size_ / 2);
      data_.reset(new T[capacity + 1]);
#ifndef NDEBUG  // Tests: memory a pass reads before it writes shows.
      const T poison =
          std::is_floating_point_v<T> ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(-1);
      std::fill_n(data_.get(), capacity + 1, poison);
#endif
      size_ = capacity;
      return absl::OkStatus();
    }
    T* data() const { return data_.get(); }
    int64_t size() const { return size_; }

   private:
    std::unique_ptr<T[]> data_;
    int64_t size_ = 0;
  };

  template <typename T>
  absl::Status CopyIn(T* dst, const T* host, int64_t n) {
    std::copy_n(host, n, dst);
    return absl::OkStatus();
  }
  template <typename T>
  absl::Status CopyOut(T* host, const T* src, int64_t n) {
    std::copy_n(src, n, host);
    return absl::OkStatus();
  }
  absl::Status Copy(float* dst, const float* src, int64_t n) { return CopyIn(dst, src, n); }
  absl::Status Copy2D(float* dst, int64_t dst_stride, const float* src, int64_t src_stride,
                      int64_t rows, int64_t width);

  // With w.w16: x rounded to bf16, the bf16 weights, products summed in f32 (the GPU's GemmEx).
  absl::Status Linear(const float* x, int64_t rows, const LinearView& w, float* y);
  absl::Status RoundToBf16(const float* x, int64_t n, uint16_t* out);
  absl::Status DequantizeFp8(const kernels::Fp8DequantArgs& a);
  // With a.w16: as Linear's bf16 products.
  absl::Status HeadLinear(const kernels::HeadLinearArgs& a);
  absl::Status PartialRope(const kernels::PartialRopeArgs& a);
  absl::Status ShufflePack(const float* x, const int32_t* order, int64_t rows, int64_t width,
                           float* packed);
  absl::Status ShuffleUnpack(const float* packed, const int32_t* order, int64_t rows, int64_t width,
                             float* x);
  absl::Status PredictDevices(const kernels::PredictDevicesArgs& a);
  // kernels/cpu/grouped_swiglu with bf16_activation, as the tensor-core kernel CudaOps runs.
  absl::Status GroupedSwiGlu(const kernels::GroupedSwiGluArgs& a);
  absl::Status RmsNorm(float* x, int64_t rows, int64_t width, int64_t stride, const float* weight,
                       float eps);
  absl::Status QkNormRope(const kernels::QkNormRopeArgs& a);
  absl::Status SiluMul(float* gate, const float* up, int64_t n);
  absl::Status AddInPlace(float* x, const float* y, int64_t n);
  absl::Status AddRowBias(float* x, int64_t rows, int64_t width, int64_t stride, const float* bias);
  absl::Status SigmoidGateAdd(float* out, const float* y, const float* gate, int64_t rows,
                              int64_t width);
  absl::Status GatherRowsByIndex(const float* table, const int32_t* index, int64_t rows,
                                 int64_t width, float* out);
  absl::Status StorePagedKv(const kernels::StorePagedKvArgs& a);
  absl::Status PagedAttention(const kernels::PagedAttentionArgs& a);
  absl::Status RouterGating(const kernels::RouterGatingArgs& a);
  absl::Status PermuteByExpert(const kernels::PermuteByExpertArgs& a);
  absl::Status GatherRows(const kernels::GatherRowsArgs& a);
  absl::Status CombineRows(const kernels::CombineRowsArgs& a);
  absl::Status ScatterAddRows(float* dst, const float* src, const int32_t* index, int64_t rows,
                              int64_t width);
  absl::Status Zero(float* x, int64_t n);
  absl::Status Begin() { return absl::OkStatus(); }
  absl::Status Finish() { return absl::OkStatus(); }
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_CPU_OPS_H_
