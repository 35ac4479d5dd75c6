// The values a chat template computes with: Jinja's (Python's) undefined, None, bool, int,
// float, str, list and dict, plus `namespace()` objects. Lists, dicts and namespaces are shared
// references, as in Python: `{% set ns.x = 1 %}` changes the namespace every name for it sees.
//
// Rendering (`{{ v }}`) and `tojson` follow Python and Jinja2 (what Hugging Face transformers
// runs chat templates with): True, None, 1.0, ['a', 1]; tojson as json.dumps with
// ensure_ascii=False.
//
// Strings share their bytes: copying a Value is O(1) whatever its length, and `a + b` on a string
// that a render built appends in place when `a` is the newest text of its buffer (the buffer's
// end), so `{% set ns.s = ns.s + piece %}` in a loop is linear, not quadratic. Every Value still
// reads as an immutable string: an older Value over the same buffer sees only its own prefix
// (str() copies it out the first time it is read after the buffer grew past it).
//
// Work (ThreadWork): bytes of strings built or copied, list items and dict entries copied or
// scanned, on this thread — what a render's `max_work` bounds, so that an operation that is
// quadratic in its template (growth by copies, lookups in a big dict) stops in bounded time.
//
// Not thread-safe to mutate; a Value shared between threads must be read-only. (Values a render
// did not build — literals, JSON input — never have their buffers appended to.)
#ifndef SEMMOE_ENGINE_TEXT_JINJA_VALUE_H_
#define SEMMOE_ENGINE_TEXT_JINJA_VALUE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::jinja {

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict };
  static constexpr int64_t kUnbounded = INT64_MAX;
  using List = std::vector<Value>;
  using Dict = std::vector<std::pair<std::string, Value>>;  // In insertion order.

  Value() = default;  // Undefined.
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value NewList(List items = {});
  static Value NewDict(Dict items = {});
  static Value NewNamespace(Dict items = {});  // A dict whose attributes may be set.
  // JSON → Value (objects keep their key order). Nesting deeper than `max_depth` is refused.
  static absl::StatusOr<Value> FromJson(const nlohmann::ordered_json& json, int max_depth = 64);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kDict && namespace_; }

  bool bool_value() const { return b_; }
  int64_t int_value() const { return i_; }
  double number() const { return kind_ == Kind::kInt ? static_cast<double>(i_) : f_; }
  // A string's text ("" for other kinds).
  const std::string& str() const;
  // `a + text` for a string `a` (REQUIRES: a.is_string()): appended in place where `a` is a
  // render-built string at its buffer's end, else copied once into a new buffer that later
  // appends extend.
  static Value Concat(const Value& a, std::string_view text);
  // `a + b` for lists `a` and `b` (REQUIRES: both lists): `b`'s items appended in place where
  // `a` is a render-built list at its storage's end (`ns.xs = ns.xs + [x]` in a loop is linear,
  // not quadratic), else copied once into new storage that later appends extend.
  static Value ConcatList(const Value& a, const Value& b);
  // REQUIRES: is_list() / is_dict(). The shared storage (mutable through every copy); a list
  // whose storage grew past it (a later `+` on it) first takes its own copy of its items.
  List& list() const;
  Dict& dict() const { return *dict_; }

  // A dict's value for `key`, or undefined (also for non-dicts).
  Value Get(const std::string& key) const;
  // Sets or adds `key`. REQUIRES: is_dict().
  void Set(const std::string& key, Value v) const;

  // Python truthiness: undefined, None, False, 0, "", [] and {} are false.
  bool Truthy() const;
  // What `{{ v }}` writes (str(v)); undefined writes nothing. A list or dict stops being written
  // once the text passes `max_bytes`: the result is then longer than max_bytes (callers refuse
  // it) but not much longer than max_bytes plus its longest string.
  std::string Render(int64_t max_bytes = kUnbounded) const;
  // Python repr() (strings quoted), as lists and dicts show their items; bounded as Render.
  std::string Repr(int64_t max_bytes = kUnbounded) const;
  // json.dumps(v, ensure_ascii=False[, indent]); indent < 0: one line with ", " and ": ".
  // Undefined is an error; namespaces are refused too. ResourceExhausted when the text would
  // pass `max_bytes` (checked before a huge indentation is built).
  absl::StatusOr<std::string> ToJson(int64_t indent = -1, int64_t max_bytes = kUnbounded) const;
  // The type's name as errors give it: "undefined", "none", "str", "list", ...
  std::string TypeName() const;

  // Python ==.
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  void AppendRepr(int depth, int64_t max_bytes, std::string* out) const;
  static bool Equal(const Value& a, const Value& b, int depth);

  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool namespace_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  // A string: the first `slen_` bytes of `sbuf_` (null: ""). `sgrow_`: a render built the buffer
  // and may append past `slen_` when it is the buffer's end. Mutable: str() copies a prefix out.
  mutable std::shared_ptr<std::string> sbuf_;
  mutable size_t slen_ = 0;
  mutable bool sgrow_ = false;
  // A list: the first `llen_` items of `list_`, which a render-built list (`lgrow_`) may extend
  // in place when it is the storage's end — as strings do above.
  mutable std::shared_ptr<List> list_;
  mutable size_t llen_ = 0;
  mutable bool lgrow_ = false;
  std::shared_ptr<Dict> dict_;
};

// The work Value operations did on this thread so far (see above); a render reads it before and
// while it runs.
int64_t ThreadWork();
void AddThreadWork(int64_t units);

// Python's str(float): the shortest repr, always with a '.' or an exponent ("1.0", "1e-05").
std::string FormatFloat(double f);

}  // namespace semmoe::engine::jinja

#endif  // SEMMOE_ENGINE_TEXT_JINJA_VALUE_H_
