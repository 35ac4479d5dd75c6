// A model shape file (planner build/predict --shape FILE; planner/sim/model_shape.h).
#include "planner/sim/model_shape.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)semmoe::planner::sim::ShapeFromJson(semmoe::fuzz::Text(data, size), "shape.json");
  return 0;
}
