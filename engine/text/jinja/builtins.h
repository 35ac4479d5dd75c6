// What a chat template can call: filters (`x | tojson`), tests (`x is defined`), methods of
// str and dict (`s.startswith('a')`, `d.items()`), global functions (`namespace`, `range`,
// `raise_exception`, `strftime_now`), and the Python operators on values.
//
// Each returns InvalidArgument naming the builtin for a wrong type or argument count, and
// NotFound for a name that is not a builtin (the caller adds the template's line).
#ifndef SEMMOE_ENGINE_TEXT_JINJA_BUILTINS_H_
#define SEMMOE_ENGINE_TEXT_JINJA_BUILTINS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/text/jinja/value.h"

namespace semmoe::engine::jinja {

struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The longest string a builtin may make (the render's output cap): longer is ResourceExhausted,
  // refused before it is allocated.
  int64_t max_bytes = Value::kUnbounded;

  // The i-th positional or the keyword `name`; undefined when neither was given.
  Value Get(size_t i, const std::string& name) const;
};

absl::StatusOr<Value> ApplyFilter(const std::string& name, const Value& value, const Args& args);
absl::StatusOr<bool> ApplyTest(const std::string& name, const Value& value, const Args& args);
// `object.name(args)` for a str, dict or list `object`.
absl::StatusOr<Value> CallMethod(const Value& object, const std::string& name, const Args& args);
// A global function; `raise_exception` returns its message as InvalidArgument.
absl::StatusOr<Value> CallFunction(const std::string& name, const Args& args);
bool IsFunction(const std::string& name);

// Binary operators: + - * / // % ** ~ == != < > <= >= in, "not in". Integer arithmetic whose
// result leaves 64 bits is InvalidArgument (Python would grow the int; nothing a chat template
// needs does); a string longer than `max_bytes` or a list longer than 2^20 items is
// ResourceExhausted.
absl::StatusOr<Value> BinaryOp(const std::string& op, const Value& a, const Value& b,
                               int64_t max_bytes = Value::kUnbounded);
// Python subscripts: list/str index (negative from the end), dict key; undefined when absent.
absl::StatusOr<Value> Subscript(const Value& object, const Value& index);
// Python slices (start, stop, step may be undefined).
absl::StatusOr<Value> Slice(const Value& object, const Value& start, const Value& stop,
                            const Value& step);
// The items a `for` walks: a list's, a dict's keys, a string's characters.
absl::StatusOr<Value::List> Iterate(const Value& v);

}  // namespace semmoe::engine::jinja

#endif  // SEMMOE_ENGINE_TEXT_JINJA_BUILTINS_H_
