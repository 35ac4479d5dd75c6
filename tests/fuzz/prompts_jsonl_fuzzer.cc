// Prompt and score JSONL inputs (engine/offline/jsonl.h): every line's id and token ids; and the
// same file as `planner eval --zero_shot --domains` reads it (id → domain).
#include "engine/offline/jsonl.h"
#include "planner/cli/studies.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace semmoe::engine::offline;
  const std::string path = semmoe::fuzz::ToFile(data, size, "jsonl");
  (void)semmoe::planner::cli::ReadDomains(path);
  auto r = JsonlReader::Open(path);
  if (!r.ok()) return 0;
  nlohmann::json line;
  for (int i = 0; i < 10000; ++i) {
    absl::StatusOr<bool> more = (*r)->Next(line);
    if (!more.ok() || !*more) break;
    (void)ReadId(line, (*r)->where());
    (void)ReadTokenIds(line, 151936, (*r)->where());
  }
  return 0;
}
