#include "engine/text/byte_level.h"

#include <array>

#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "engine/text/unicode.h"

namespace semmoe::engine::model {
namespace {

struct Tables {
  std::array<char32_t, 256> forward;
  std::array<int, 512> inverse;  // Mapped code points are all below 324.
  Tables() {
    inverse.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      forward[b] = printable ? static_cast<char32_t>(b) : next++;
      inverse[forward[b]] = b;
    }
  }
};

const Tables& GetTables() {
  static const Tables* tables = new Tables();
  return *tables;
}

}  // namespace

char32_t ByteToCodePoint(unsigned char byte) { return GetTables().forward[byte]; }

std::string BytesToTokenText(absl::string_view bytes) {
  std::string out;
  for (char b : bytes) AppendUtf8(ByteToCodePoint(static_cast<unsigned char>(b)), out);
  return out;
}

absl::StatusOr<std::string> TokenTextToBytes(absl::string_view token) {
  ASSIGN_OR_RETURN(std::vector<CodePoint> cps, DecodeUtf8(token));
  const Tables& t = GetTables();
  std::string bytes;
  for (const CodePoint& cp : cps) {
    if (cp.value >= t.inverse.size() || t.inverse[cp.value] < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("token '%s' has a character (U+%04X) outside the byte-level alphabet",
                          token, static_cast<uint32_t>(cp.value)));
    }
    bytes += static_cast<char>(t.inverse[cp.value]);
  }
  return bytes;
}

}  // namespace semmoe::engine::model
