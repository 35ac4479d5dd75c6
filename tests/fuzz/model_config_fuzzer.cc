// config.json of every architecture (engine/text/config.h).
#include "engine/text/config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)semmoe::engine::model::ParseModelConfig(semmoe::fuzz::Text(data, size));
  return 0;
}
