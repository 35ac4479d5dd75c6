// Splits a Jinja template into text and tag tokens, with the whitespace rules Hugging Face
// applies to chat templates: `trim_blocks` (the newline after a block or comment tag goes),
// `lstrip_blocks` (spaces and tabs before a block or comment tag that starts its line go), and
// the `-` / `+` markers (`{%-`, `-%}`, `{{-`, `-}}`, `{%+`, `+%}`). Comments are dropped.
#ifndef SEMMOE_ENGINE_TEXT_JINJA_LEXER_H_
#define SEMMOE_ENGINE_TEXT_JINJA_LEXER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace semmoe::engine::jinja {

enum class TokenKind {
  kText,        // Template text, after whitespace control.
  kExprOpen,    // {{
  kExprClose,   // }}
  kBlockOpen,   // {%
  kBlockClose,  // %}
  kName,        // identifiers and keywords (if, for, and, not, true, none, ...)
  kString,      // a string literal, unescaped
  kInt,
  kFloat,
  kOp,   // operators and punctuation: + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } . , : |
  kEnd,  // end of the template
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;  // The text, name, string value or operator.
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;  // 1-based, where the token starts.
};

// The tokens, ending with kEnd. InvalidArgument naming the line for an unterminated tag,
// comment or string, or a character no expression may hold.
absl::StatusOr<std::vector<Token>> Lex(std::string_view source);

}  // namespace semmoe::engine::jinja

#endif  // SEMMOE_ENGINE_TEXT_JINJA_LEXER_H_
