// Attention-TP's device prediction from lookup tables on the CPU (kernels/op_args.h:
// PredictDevicesArgs): the reference the CUDA kernel (kernels/cuda/predict_devices.h) is compared
// with, and what the GPU forward's CPU emulation runs. engine/parallel/device_predictor_test checks
// it gives DevicePredictor::Score's scores from DevicePredictor::Tables().
#ifndef SEMMOE_KERNELS_CPU_PREDICT_DEVICES_H_
#define SEMMOE_KERNELS_CPU_PREDICT_DEVICES_H_

#include "kernels/op_args.h"

namespace semmoe::kernels::cpu {

void PredictDevices(const PredictDevicesArgs& args);

}  // namespace semmoe::kernels::cpu

#endif  // SEMMOE_KERNELS_CPU_PREDICT_DEVICES_H_
