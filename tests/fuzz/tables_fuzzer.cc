// The stored tables (planner/affinity): token affinity, transition (A) tables and placement
// JSON — each parser on the same bytes.
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/transition_table.h"
#include "planner/placement/placement.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace semmoe::planner;
  const std::string bytes = semmoe::fuzz::Text(data, size);
  auto affinity = TokenAffinity::Deserialize(bytes);
  if (affinity.ok()) (void)affinity->Serialize();
  (void)TransitionTable::Deserialize(bytes);
  auto placement = Placement::FromJson(bytes);
  if (placement.ok()) (void)placement->ToJson();
  return 0;
}
