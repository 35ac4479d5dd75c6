// Special-token text in a chat request's strings (engine/text/special_text_mask.h) and its
// encoding as text (Tokenizer literal_spans): the input's first byte picks how the "template"
// treats the masked strings (kept whole, sliced at a byte, or escaped), the rest is the strings
// (split at '\n'). Checks: no crash; a whole render unmasks to exactly the unmasked render, its
// spans covering special-token texts only; a cut or escaped one is refused or unmasks to text
// whose spans are in range; encoding with those spans succeeds and is never shorter than
// encoding with the special tokens parsed.
#include <stdlib.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/text/special_text_mask.h"
#include "engine/text/tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/fuzz_util.h"

namespace {

using semmoe::engine::model::SpecialTextMask;
using semmoe::engine::model::Tokenizer;

const std::vector<std::string>& Specials() {
  static const auto* const v =
      new std::vector<std::string>{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im"};
  return *v;
}

// The tiny test model's tokenizer (its special tokens are the ChatML three), written once.
const Tokenizer* Tiny() {
  static const Tokenizer* const t = []() -> const Tokenizer* {
    char dir[] = "/tmp/semmoe-special-text-fuzz-XXXXXX";
    if (mkdtemp(dir) == nullptr) return nullptr;
    if (!semmoe::testing::WriteTinyModel({.seed = 1}, dir).ok()) return nullptr;
    auto loaded = Tokenizer::FromDirectory(dir);
    return loaded.ok() ? loaded->release() : nullptr;
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const SpecialTextMask mask = *SpecialTextMask::Create(Specials());
  const uint8_t how = data[0];
  const std::string text = semmoe::fuzz::Text(data + 1, size - 1);
  nlohmann::ordered_json strings = nlohmann::ordered_json::array();
  for (absl::string_view s : absl::StrSplit(text, '\n')) strings.push_back(std::string(s));
  const nlohmann::ordered_json masked = mask.Mask(strings, nullptr);
  std::string plain, rendered;
  for (size_t i = 0; i < strings.size(); ++i) {
    plain += "<|im_start|>user\n" + strings[i].get<std::string>() + "<|im_end|>\n";
    std::string m = masked[i].get<std::string>();
    if (how % 3 == 1 && !m.empty()) m = m.substr(0, how % m.size());  // A template slicing.
    if (how % 3 == 2)
      m = nlohmann::json(m).dump(
          -1, ' ', false,
          nlohmann::json::error_handler_t::replace);  // A template escaping (tojson).
    rendered += "<|im_start|>user\n" + m + "<|im_end|>\n";
  }
  absl::StatusOr<SpecialTextMask::Unmasked> u = mask.Unmask(rendered);
  if (how % 3 == 0) {
    if (!u.ok() || u->text != plain) std::abort();  // A whole render comes back exactly.
    for (const auto& [b, e] : u->literal_spans) {
      bool special = false;
      for (const std::string& s : Specials()) special |= u->text.compare(b, e - b, s) == 0;
      if (!special && u->text.compare(b, e - b, "\xEE\x80\x80") != 0) std::abort();
    }
  }
  if (!u.ok()) return 0;
  for (size_t s = 0; s < u->literal_spans.size(); ++s) {
    const auto& [b, e] = u->literal_spans[s];
    if (b > e || e > u->text.size() || (s > 0 && b < u->literal_spans[s - 1].second)) {
      std::abort();
    }
  }
  const Tokenizer* t = Tiny();
  if (t == nullptr) std::abort();
  absl::StatusOr<std::vector<int32_t>> as_text =
      t->Encode(u->text, {.literal_spans = u->literal_spans});
  absl::StatusOr<std::vector<int32_t>> as_control = t->Encode(u->text);
  if (as_text.ok() != as_control.ok()) std::abort();  // Both fail only for invalid UTF-8.
  if (as_text.ok() && as_text->size() < as_control->size()) std::abort();
  return 0;
}
