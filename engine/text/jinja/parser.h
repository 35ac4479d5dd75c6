// Parses a chat template into statements. The supported language (docs/OPENAI.md, "Chat
// templates"): text, {{ }}, comments, if/elif/else, for (with tuple targets, `if` filters,
// else, loop.*), set (names and namespace attributes), break/continue, generation blocks;
// literals, lists, dicts, attributes, subscripts and slices, calls, filters, tests, and
// Python's operators. Anything else (macro, call, include, extends, raw, block set) is refused
// with its line, never skipped.
#ifndef SEMMOE_ENGINE_TEXT_JINJA_PARSER_H_
#define SEMMOE_ENGINE_TEXT_JINJA_PARSER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "engine/text/jinja/ast.h"

namespace semmoe::engine::jinja {

// InvalidArgument naming the line and what was expected.
absl::StatusOr<Body> Parse(std::string_view source);

}  // namespace semmoe::engine::jinja

#endif  // SEMMOE_ENGINE_TEXT_JINJA_PARSER_H_
