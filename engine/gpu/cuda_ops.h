// CudaOps: ForwardRunner's operations (engine/forward/forward_runner.h) on one CUDA device — the
// kernels of //kernels/cuda, cuBLAS SGEMM in pedantic math (plain f32, no TF32) for f32 weights,
// cuBLAS GemmEx on tensor cores (bf16 × bf16, f32 accumulation and output) for bf16 ones — all
// queued on the object's own stream. Copies to the host wait for the stream. Thread-compatible;
// Begin() makes its device current on the calling thread (passes may run on other threads).
#ifndef SEMMOE_ENGINE_GPU_CUDA_OPS_H_
#define SEMMOE_ENGINE_GPU_CUDA_OPS_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>

#include "absl/status/statusor.h"
#include "engine/forward/model_view.h"
#include "engine/gpu/device_array.h"
#include "kernels/op_args.h"

namespace semmoe::engine::gpu {

class CudaOps {
 public:
  template <typename T>
  using Array = DeviceArray<T>;
  static constexpr bool kGraphs = true;  // engine/forward/decode_graphs.h.
  // Kernels run on their stream while the NCCL collectives run on theirs (ep_exchange.h).
  static constexpr bool kOverlapsCollectives = true;

  // UNAVAILABLE without a CUDA device; INVALID_ARGUMENT for a device that does not exist.
  static absl::StatusOr<std::unique_ptr<CudaOps>> Create(int device);
  ~CudaOps();

  template <typename T>
  absl::Status CopyIn(T* dst, const T* host, int64_t n) {
    return CopyBytes(dst, host, sizeof(T) * n, cudaMemcpyHostToDevice, /*wait=*/false);
  }
  template <typename T>
  absl::Status CopyOut(T* host, const T* src, int64_t n) {
    return CopyBytes(host, src, sizeof(T) * n, cudaMemcpyDeviceToHost, /*wait=*/true);
  }
  absl::Status Copy(float* dst, const float* src, int64_t n) {
    return CopyBytes(dst, src, sizeof(float) * n, cudaMemcpyDeviceToDevice, /*wait=*/false);
  }

  absl::Status Copy2D(float* dst, int64_t dst_stride, const float* src, int64_t src_stride,
                      int64_t rows, int64_t width);
  absl::Status Linear(const float* x, int64_t rows, const forward::LinearView& w, float* y);
  // One strided batched product (cuBLAS), f32 pedantic or bf16 on tensor cores as Linear.
  absl::Status HeadLinear(const kernels::HeadLinearArgs& a);
  absl::Status PartialRope(const kernels::PartialRopeArgs& a);
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
  absl::Status RoundToBf16(const float* x, int64_t n, uint16_t* out);
  absl::Status DequantizeFp8(const kernels::Fp8DequantArgs& a);
  absl::Status ShufflePack(const float* x, const int32_t* order, int64_t rows, int64_t width,
                           float* packed);
  absl::Status ShuffleUnpack(const float* packed, const int32_t* order, int64_t rows, int64_t width,
                             float* x);
  absl::Status PredictDevices(const kernels::PredictDevicesArgs& a);
  // The tensor-core kernel (kernels/cuda/grouped_swiglu.h); `a.rows` may be an upper bound.
  absl::Status GroupedSwiGlu(const kernels::GroupedSwiGluArgs& a);
  // CUDA graphs (decode_graphs.h): BeginCapture() records this stream's work instead of running
  // it; EndCapture(key) ends the recording and instantiates it as graph `key` (replacing an older
  // one); Replay(key) launches it. scratch_generation() changes whenever this object's own
  // scratch memory moves (a captured graph that used it is then stale).
  absl::Status BeginCapture();
  absl::Status EndCapture(int key);
  absl::Status Replay(int key);
  uintptr_t scratch_generation() const { return scratch_generation_; }
  absl::Status Begin();  // Makes the device current on the calling thread.
  absl::Status Finish();

  int device() const { return device_; }

 private:
  explicit CudaOps(int device) : device_(device) {}
  absl::Status CopyBytes(void* dst, const void* src, int64_t bytes, cudaMemcpyKind kind, bool wait);

  int device_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceArray<uint16_t> x16_;           // A bf16 product's input, rounded.
  DeviceArray<char> cublas_workspace_;  // Fixed, so that products can be captured.
  uintptr_t scratch_generation_ = 0;
  std::map<int, cudaGraphExec_t> graphs_;
};

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_CUDA_OPS_H_
