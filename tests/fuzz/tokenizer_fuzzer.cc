// tokenizer.json (engine/text/tokenizer.h): load, then encode and decode a fixed text.
#include "engine/text/tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = semmoe::engine::model::Tokenizer::FromJson(semmoe::fuzz::Text(data, size));
  if (!t.ok()) return 0;
  auto ids = (*t)->Encode("Hello world<|im_end|> 你好 123 \xF0\x9F\x99\x82");
  if (ids.ok()) (void)(*t)->Decode(*ids);
  return 0;
}
