// The host memory a checkpoint's load takes: peak resident bytes (VmHWM) over the process's
// resident bytes before the load, against the checkpoint's files and its largest layer's
// weights dequantised to bf16 — issue 40's bound for FP8 checkpoints ("no more than the FP8 file
// plus one layer's dequantised weights"). Each run loads once, in a fresh process (peaks do not
// reset):
//   load_peak --model DIR [--fp8_in_memory]        prints one JSON line
// --fp8_in_memory is the FP8 device forward's load (engine --precision fp8 --device cuda); without
// it, the CPU forward's (every weight dequantised to f32). docs/PERFORMANCE.md "FP8 load".
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "common/file.h"
#include "common/proc_status.h"
#include "engine/model/weights.h"
#include "engine/text/config.h"
#include "kernels/safetensors.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, model, "", "model directory");
ABSL_FLAG(bool, fp8_in_memory, false, "load FP8 weights FP8-only (the FP8 device forward's load)");

namespace semmoe {
namespace {

// Every *.safetensors file of the checkpoint.
int64_t FileBytes(const std::string& dir) {
  int64_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (absl::EndsWith(entry.path().filename().string(), ".safetensors")) {
      total += static_cast<int64_t>(entry.file_size());
    }
  }
  return total;
}

// The largest layer's linear weights as bf16 (2 bytes a value).
int64_t LargestLayerBf16(const engine::model::ModelWeights& w) {
  int64_t most = 0;
  for (const engine::model::LayerWeights& l : w.layers) {
    int64_t values = 0;
    auto add = [&](const engine::model::LinearWeight& x) { values += x.rows() * x.cols(); };
    for (const auto* x : engine::model::NonExpertLinears(l)) add(*x);
    for (const auto& e : l.experts) add(e.gate), add(e.up), add(e.down);
    most = std::max(most, 2 * values);
  }
  return most;
}

int Run() {
  const std::string dir = UserPath(absl::GetFlag(FLAGS_model));
  const int64_t before = ProcStatusBytes("VmRSS");
  absl::StatusOr<engine::model::ModelConfig> config = engine::model::LoadModelConfig(dir);
  if (!config.ok()) {
    std::cerr << "load_peak: " << config.status() << "\n";
    return 1;
  }
  std::unique_ptr<engine::model::ModelWeights> weights;
  {
    auto checkpoint = kernels::Checkpoint::Open(dir);
    if (!checkpoint.ok()) {
      std::cerr << "load_peak: " << checkpoint.status() << "\n";
      return 1;
    }
    auto loaded = engine::model::LoadWeights(
        *config, **checkpoint, {.fp8_in_memory = absl::GetFlag(FLAGS_fp8_in_memory)});
    if (!loaded.ok()) {
      std::cerr << "load_peak: " << loaded.status() << "\n";
      return 1;
    }
    weights = *std::move(loaded);
  }
  const int64_t peak = ProcStatusBytes("VmHWM") - before;
  const int64_t file = FileBytes(dir), layer = LargestLayerBf16(*weights);
  nlohmann::ordered_json out = {{"model", dir},
                                {"fp8_in_memory", absl::GetFlag(FLAGS_fp8_in_memory)},
                                {"fp8_checkpoint", config->fp8.enabled()},
                                {"file_bytes", file},
                                {"largest_layer_bf16_bytes", layer},
                                {"peak_load_bytes", peak},
                                {"resident_weight_bytes", engine::model::WeightBytes(*weights)},
                                {"peak_over_file", static_cast<double>(peak) / file},
                                {"within_file_plus_one_layer", peak <= file + layer}};
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace
}  // namespace semmoe

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return semmoe::Run();
}
