// Flat-array routing traces (planner/trace/array_trace.h): the input is index.json, tokens.u16
// and topk_ids.u8 joined by "\n@@\n"; each is written to its file, then imported.
#include <string>
#include <vector>

#include "planner/trace/array_trace.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/split_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts =
      semmoe::fuzz::SplitParts(semmoe::fuzz::Text(data, size), 3);
  const std::string dir = semmoe::fuzz::Dir("array-trace");
  semmoe::fuzz::Write(dir + "/index.json", parts[0]);
  semmoe::fuzz::Write(dir + "/tokens.u16", parts[1]);
  semmoe::fuzz::Write(dir + "/topk_ids.u8", parts[2]);
  auto set = semmoe::planner::trace::ImportArrayTrace(dir);
  if (set.ok()) (void)set->num_requests();
  return 0;
}
