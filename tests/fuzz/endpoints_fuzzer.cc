// The endpoints JSON the console reads (console/endpoints.h).
#include "console/endpoints.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)semmoe::console::ParseEndpoints(semmoe::fuzz::Text(data, size), "endpoints.json");
  return 0;
}
