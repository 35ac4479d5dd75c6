// .safetensors files (kernels/safetensors.h): open, then view every tensor.
#include "kernels/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = semmoe::fuzz::ToFile(data, size, "st");
  auto f = semmoe::kernels::SafetensorsFile::Open(path);
  if (!f.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const auto& info : (*f)->tensors()) {
    semmoe::kernels::Tensor t = (*f)->View(info);
    if (t.nbytes() > 0) sink = sink ^ static_cast<const uint8_t*>(t.raw_data())[t.nbytes() - 1];
  }
  return 0;
}
