// The values a chat template computes with: Jinja's (Python's) undefined, None, bool, int,
// float, str, list and dict, plus `namespace()` objects. Lists, dicts and namespaces are shared
// references, as in Python: `{% set ns.x = 1 %}` changes the namespace every name for it sees.
//
// Rendering (`{{ v }}`) and `tojson` follow Python and Jinja2 (what Hugging Face transformers
// runs chat templates with): True, None, 1.0, ['a', 1]; tojson as json.dumps with
// ensure_ascii=False.
//
// Not thread-safe to mutate; a Value shared between threads must be read-only.
#ifndef SEMMOE_ENGINE_TEXT_JINJA_VALUE_H_
#define SEMMOE_ENGINE_TEXT_JINJA_VALUE_H_

#include <cstdint>
#include <memory>
#include <string>
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
  const std::string& str() const { return s_; }
  // REQUIRES: is_list() / is_dict(). The shared storage (mutable through every copy).
  List& list() const { return *list_; }
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
  std::string s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
};

// Python's str(float): the shortest repr, always with a '.' or an exponent ("1.0", "1e-05").
std::string FormatFloat(double f);

}  // namespace semmoe::engine::jinja

#endif  // SEMMOE_ENGINE_TEXT_JINJA_VALUE_H_
