// Routing-trace files (planner/trace/trace_format.h): open and read every record.
#include "planner/trace/trace_reader.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = semmoe::fuzz::ToFile(data, size, "trace");
  auto r = semmoe::planner::trace::TraceReader::Open(path);
  if (!r.ok()) return 0;
  semmoe::planner::trace::TraceToken token;
  for (int i = 0; i < 1 << 20; ++i) {
    absl::StatusOr<bool> more = (*r)->Next(token);
    if (!more.ok() || !*more) break;
  }
  return 0;
}
