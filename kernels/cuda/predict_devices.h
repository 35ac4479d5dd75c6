// Attention-TP's device prediction from lookup tables on the GPU (kernels/op_args.h:
// PredictDevicesArgs); the CPU reference is kernels/cpu/predict_devices.h, compared by
// kernels/cuda/predict_devices_test. Pointers are device memory; enqueues on `stream` and returns
// the launch error without synchronising.
#ifndef SEMMOE_KERNELS_CUDA_PREDICT_DEVICES_H_
#define SEMMOE_KERNELS_CUDA_PREDICT_DEVICES_H_

#include "kernels/cuda/launch.h"
#include "kernels/op_args.h"

namespace semmoe::kernels::cuda {

// One thread per token (a binary search of the contexts, `devices` floats copied).
CudaError LaunchPredictDevices(const PredictDevicesArgs& args, Stream stream);

}  // namespace semmoe::kernels::cuda

#endif  // SEMMOE_KERNELS_CUDA_PREDICT_DEVICES_H_
