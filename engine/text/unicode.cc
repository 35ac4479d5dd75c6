#include "engine/text/unicode.h"

#include "absl/strings/str_cat.h"
#include "unicode/normalizer2.h"
#include "unicode/uchar.h"
#include "unicode/unistr.h"

namespace semmoe::engine::model {
namespace {

// Decodes one code point at `i`; returns its length or 0 if invalid.
size_t DecodeOne(absl::string_view s, size_t i, char32_t& out) {
  const unsigned char b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    out = b0;
    return 1;
  }
  size_t len;
  char32_t min;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, min = 0x80, out = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, min = 0x800, out = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, min = 0x10000, out = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    out = (out << 6) | (b & 0x3F);
  }
  if (out < min || out > 0x10FFFF || (out >= 0xD800 && out <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

absl::StatusOr<std::vector<CodePoint>> DecodeUtf8(absl::string_view text) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    char32_t c;
    size_t len = DecodeOne(text, i, c);
    if (len == 0) return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 at byte ", i));
    out.push_back(CodePoint{c, i, len});
    i += len;
  }
  return out;
}

std::string ToValidUtf8(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    char32_t c;
    const size_t len = DecodeOne(bytes, i, c);
    if (len == 0) {
      AppendUtf8(0xFFFD, out);
      ++i;
    } else {
      out.append(bytes.data() + i, len);
      i += len;
    }
  }
  return out;
}

void AppendUtf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

size_t CompleteUtf8Prefix(absl::string_view bytes) {
  // Look back at most 3 bytes for the start of a sequence that is cut off by the end.
  size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const unsigned char b = static_cast<unsigned char>(bytes[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // Continuation byte: keep looking for the lead.
    size_t need = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

absl::StatusOr<std::string> NormalizeNfc(absl::string_view text) {
  bool ascii = true;
  for (char ch : text) ascii &= static_cast<unsigned char>(ch) < 0x80;
  if (ascii) return std::string(text);  // ASCII is always NFC.
  auto decoded = DecodeUtf8(text);
  if (!decoded.ok()) return decoded.status();
  UErrorCode error = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(error);
  if (U_FAILURE(error)) {
    return absl::InternalError(absl::StrCat("ICU NFC unavailable: ", u_errorName(error)));
  }
  icu::UnicodeString source = icu::UnicodeString::fromUTF8(
      icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  icu::UnicodeString normalized = nfc->normalize(source, error);
  if (U_FAILURE(error)) {
    return absl::InternalError(absl::StrCat("ICU NFC failed: ", u_errorName(error)));
  }
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

bool IsLetter(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_L_MASK) != 0;
}

bool IsNumber(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_N_MASK) != 0;
}

bool IsWhitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= '\t' && c <= '\r');
  return u_isUWhiteSpace(static_cast<UChar32>(c));
}

bool IsMark(char32_t c) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_M_MASK) != 0; }

bool IsPunctuation(char32_t c) {
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_P_MASK) != 0;
}

bool IsSymbol(char32_t c) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_S_MASK) != 0; }

}  // namespace semmoe::engine::model
