#include "engine/text/jinja/builtins.h"

#include <cmath>
#include <ctime>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace semmoe::engine::jinja {
namespace {

// Lists a template builds are bounded (range(10**9) must not exhaust memory).
constexpr int64_t kMaxItems = 1 << 20;
// How much of raise_exception's message an error keeps.
constexpr int64_t kMaxErrorBytes = 4096;

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(what); }

// ResourceExhausted when a string of `bytes` would pass the render's cap.
absl::Status CheckBytes(int64_t bytes, int64_t max_bytes, const std::string& what) {
  if (bytes <= max_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(what, ": a string of more than ", max_bytes,
                                                   " bytes (the template's output cap)"));
}

absl::Status Overflow(const std::string& op) {
  return Bad(absl::StrCat("integer overflow in '", op, "' (the result leaves 64 bits)"));
}

// Python's int(x) of a float, within 64 bits.
absl::StatusOr<int64_t> FloatToInt(double f, const std::string& what) {
  // 2^63 is exact as a double; every double below it in magnitude converts without overflow.
  if (!(f > -9223372036854775808.0 && f < 9223372036854775808.0)) {
    return Bad(absl::StrCat(what, ": ", FormatFloat(f), " has no 64-bit integer value"));
  }
  return static_cast<int64_t>(f);
}

// A UTF-8 string's code points as substrings: Python indexes and slices str by code point.
std::vector<std::string> CodePoints(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    const unsigned char c = s[i];
    if (c >= 0xF0) {
      n = 4;
    } else if (c >= 0xE0) {
      n = 3;
    } else if (c >= 0xC0) {
      n = 2;
    }
    n = std::min(n, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

absl::StatusOr<std::string> StrArg(const Args& args, size_t i, const std::string& name,
                                   const std::string& fn, const std::string& fallback) {
  const Value v = args.Get(i, name);
  if (v.is_undefined() || v.is_none()) return fallback;
  if (!v.is_string())
    return Bad(absl::StrCat(fn, ": '", name, "' must be a str, not ", v.TypeName()));
  return v.str();
}

std::string Strip(const std::string& s, const std::string& chars, bool left, bool right) {
  size_t b = 0, e = s.size();
  auto in = [&](char c) {
    return chars.empty() ? absl::ascii_isspace(static_cast<unsigned char>(c))
                         : chars.find(c) != std::string::npos;
  };
  if (left) {
    while (b < e && in(s[b])) ++b;
  }
  if (right) {
    while (e > b && in(s[e - 1])) --e;
  }
  return s.substr(b, e - b);
}

absl::StatusOr<Value> Split(const std::string& s, const Args& args) {
  const Value sep = args.Get(0, "sep");
  const Value max = args.Get(1, "maxsplit");
  int64_t limit = max.kind() == Value::Kind::kInt ? max.int_value() : -1;
  Value::List parts;
  if (sep.is_undefined() || sep.is_none()) {  // Runs of whitespace; no empty parts.
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && absl::ascii_isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      if (limit == 0) {
        parts.push_back(Value::String(Strip(s.substr(i), "", false, true)));
        break;
      }
      size_t j = i;
      while (j < s.size() && !absl::ascii_isspace(static_cast<unsigned char>(s[j]))) ++j;
      parts.push_back(Value::String(s.substr(i, j - i)));
      if (limit > 0) --limit;
      i = j;
    }
    return Value::NewList(std::move(parts));
  }
  if (!sep.is_string() || sep.str().empty())
    return Bad("split: the separator must be a non-empty str");
  size_t start = 0;
  while (true) {
    const size_t at = limit == 0 ? std::string::npos : s.find(sep.str(), start);
    if (at == std::string::npos) {
      parts.push_back(Value::String(s.substr(start)));
      break;
    }
    parts.push_back(Value::String(s.substr(start, at - start)));
    start = at + sep.str().size();
    if (limit > 0) --limit;
  }
  return Value::NewList(std::move(parts));
}

std::string Title(const std::string& s) {
  std::string out = s;
  bool start = true;
  for (char& c : out) {
    if (absl::ascii_isalpha(static_cast<unsigned char>(c))) {
      c = start ? absl::ascii_toupper(c) : absl::ascii_tolower(c);
      start = false;
    } else {
      start = true;
    }
  }
  return out;
}

absl::StatusOr<Value> StrMethod(const std::string& s, const std::string& name, const Args& args) {
  if (name == "startswith" || name == "endswith") {
    const Value arg = args.Get(0, "prefix");
    std::vector<std::string> options;
    if (arg.is_string()) {
      options.push_back(arg.str());
    } else if (arg.is_list()) {
      for (const Value& v : arg.list()) {
        if (!v.is_string()) return Bad(absl::StrCat(name, ": a tuple of str"));
        options.push_back(v.str());
      }
    } else {
      return Bad(absl::StrCat(name, ": needs a str, not ", arg.TypeName()));
    }
    for (const std::string& o : options) {
      if (name == "startswith" ? absl::StartsWith(s, o) : absl::EndsWith(s, o)) {
        return Value::Bool(true);
      }
    }
    return Value::Bool(false);
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    absl::StatusOr<std::string> chars = StrArg(args, 0, "chars", name, "");
    if (!chars.ok()) return chars.status();
    return Value::String(Strip(s, *chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split") return Split(s, args);
  if (name == "upper") return Value::String(absl::AsciiStrToUpper(s));
  if (name == "lower") return Value::String(absl::AsciiStrToLower(s));
  if (name == "title") return Value::String(Title(s));
  if (name == "capitalize") {
    std::string out = absl::AsciiStrToLower(s);
    if (!out.empty()) out[0] = absl::ascii_toupper(out[0]);
    return Value::String(out);
  }
  if (name == "replace") {
    const Value from = args.Get(0, "old"), to = args.Get(1, "new");
    if (!from.is_string() || !to.is_string()) return Bad("replace: needs two str");
    if (from.str().empty()) return Bad("replace: an empty 'old' is not supported");
    if (to.str().size() > from.str().size()) {  // Grows: the result's size first.
      int64_t count = 0;
      for (size_t at = s.find(from.str()); at != std::string::npos;
           at = s.find(from.str(), at + from.str().size())) {
        ++count;
      }
      const int64_t growth = static_cast<int64_t>(to.str().size() - from.str().size());
      if (count > 0 && growth > (args.max_bytes - static_cast<int64_t>(s.size())) / count) {
        return CheckBytes(args.max_bytes + 1, args.max_bytes, "replace");
      }
    }
    return Value::String(absl::StrReplaceAll(s, {{from.str(), to.str()}}));
  }
  if (name == "find") {
    const Value sub = args.Get(0, "sub");
    if (!sub.is_string()) return Bad("find: needs a str");
    const size_t at = s.find(sub.str());
    if (at == std::string::npos) return Value::Int(-1);
    return Value::Int(static_cast<int64_t>(CodePoints(s.substr(0, at)).size()));
  }
  if (name == "join") {
    absl::StatusOr<Value::List> items = Iterate(args.Get(0, "iterable"));
    if (!items.ok()) return items.status();
    std::vector<std::string> parts;
    int64_t bytes = 0;
    for (const Value& v : *items) {
      if (!v.is_string()) return Bad("join: every item must be a str");
      bytes += static_cast<int64_t>(v.str().size() + (parts.empty() ? 0 : s.size()));
      if (absl::Status st = CheckBytes(bytes, args.max_bytes, "join"); !st.ok()) return st;
      parts.push_back(v.str());
    }
    return Value::String(absl::StrJoin(parts, s));
  }
  return absl::NotFoundError(absl::StrCat("str has no method '", name, "'"));
}

absl::StatusOr<Value> DictMethod(const Value& d, const std::string& name, const Args& args) {
  if (name == "items" || name == "keys" || name == "values") {
    Value::List out;
    for (const auto& [k, v] : d.dict()) {
      if (name == "items") {
        out.push_back(Value::NewList({Value::String(k), v}));
      } else {
        out.push_back(name == "keys" ? Value::String(k) : v);
      }
    }
    return Value::NewList(std::move(out));
  }
  if (name == "get") {
    const Value key = args.Get(0, "key");
    if (!key.is_string()) return Bad("get: the key must be a str");
    const Value v = d.Get(key.str());
    if (!v.is_undefined()) return v;
    const Value fallback = args.Get(1, "default");
    return fallback.is_undefined() ? Value::None() : fallback;
  }
  return absl::NotFoundError(absl::StrCat("dict has no method '", name, "'"));
}

absl::StatusOr<int64_t> ToInt(const Value& v, const std::string& what) {
  if (v.kind() == Value::Kind::kInt) return v.int_value();
  if (v.kind() == Value::Kind::kBool) return v.bool_value() ? 1 : 0;
  return Bad(absl::StrCat(what, " must be an int, not ", v.TypeName()));
}

// selectattr / rejectattr / map(attribute=...): the item's attribute (dicts only).
absl::StatusOr<Value> Attribute(const Value& item, const Value& attr) {
  if (!attr.is_string()) return Bad("the attribute name must be a str");
  Value v = item;
  for (absl::string_view part : absl::StrSplit(attr.str(), '.')) v = v.Get(std::string(part));
  return v;
}

absl::StatusOr<Value> SelectAttr(const Value& value, const Args& args, bool keep) {
  absl::StatusOr<Value::List> items = Iterate(value);
  if (!items.ok()) return items.status();
  Value::List out;
  for (const Value& item : *items) {
    absl::StatusOr<Value> a = Attribute(item, args.Get(0, "attribute"));
    if (!a.ok()) return a.status();
    bool pass = a->Truthy();
    if (args.positional.size() > 1) {
      if (!args.positional[1].is_string()) return Bad("selectattr: the test name must be a str");
      Args test_args;
      test_args.positional.assign(args.positional.begin() + 2, args.positional.end());
      absl::StatusOr<bool> t = ApplyTest(args.positional[1].str(), *a, test_args);
      if (!t.ok()) return t.status();
      pass = *t;
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::NewList(std::move(out));
}

}  // namespace

Value Args::Get(size_t i, const std::string& name) const {
  if (i < positional.size()) return positional[i];
  for (const auto& [k, v] : keyword) {
    if (k == name) return v;
  }
  return Value();
}

absl::StatusOr<Value::List> Iterate(const Value& v) {
  if (v.is_list()) return v.list();
  if (v.is_dict()) {
    Value::List keys;
    for (const auto& [k, unused] : v.dict()) keys.push_back(Value::String(k));
    return keys;
  }
  if (v.is_string()) {
    Value::List chars;
    for (std::string& c : CodePoints(v.str())) chars.push_back(Value::String(std::move(c)));
    return chars;
  }
  if (v.is_undefined()) return Value::List{};  // Jinja2 iterates an undefined as empty.
  return Bad(absl::StrCat("a ", v.TypeName(), " is not iterable"));
}

absl::StatusOr<Value> Subscript(const Value& object, const Value& index) {
  if (object.is_dict()) {
    if (!index.is_string()) return Value();
    return object.Get(index.str());
  }
  if (object.is_list() || object.is_string()) {
    if (index.kind() != Value::Kind::kInt) {
      return Bad(
          absl::StrCat(object.TypeName(), " indices must be integers, not ", index.TypeName()));
    }
    std::vector<std::string> chars;
    if (object.is_string()) chars = CodePoints(object.str());
    const int64_t n = object.is_list() ? object.list().size() : chars.size();
    int64_t i = index.int_value();
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value();
    return object.is_list() ? object.list()[i] : Value::String(chars[i]);
  }
  if (object.is_none()) return Value();
  return Bad(absl::StrCat("a ", object.TypeName(), " cannot be subscripted"));
}

absl::StatusOr<Value> Slice(const Value& object, const Value& start, const Value& stop,
                            const Value& step) {
  if (!object.is_list() && !object.is_string()) {
    return Bad(absl::StrCat("a ", object.TypeName(), " cannot be sliced"));
  }
  std::vector<std::string> chars;
  if (object.is_string()) chars = CodePoints(object.str());
  const int64_t n = object.is_list() ? object.list().size() : chars.size();
  int64_t st = 1;
  if (!step.is_undefined() && !step.is_none()) {
    absl::StatusOr<int64_t> s = ToInt(step, "a slice step");
    if (!s.ok()) return s.status();
    st = *s;
  }
  if (st == 0) return Bad("a slice step cannot be zero");
  auto bound = [&](const Value& v, int64_t fallback) -> absl::StatusOr<int64_t> {
    if (v.is_undefined() || v.is_none()) return fallback;
    absl::StatusOr<int64_t> i = ToInt(v, "a slice index");
    if (!i.ok()) return i.status();
    int64_t x = *i < 0 ? *i + n : *i;
    return st > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
  };
  absl::StatusOr<int64_t> b = bound(start, st > 0 ? 0 : n - 1);
  absl::StatusOr<int64_t> e = bound(stop, st > 0 ? n : -1);
  if (!b.ok()) return b.status();
  if (!e.ok()) return e.status();
  Value::List items;
  std::string text;
  for (int64_t i = *b; st > 0 ? i < *e : i > *e; i += st) {
    if (object.is_list()) {
      items.push_back(object.list()[i]);
    } else {
      text += chars[i];
    }
  }
  return object.is_list() ? Value::NewList(std::move(items)) : Value::String(std::move(text));
}

absl::StatusOr<Value> CallMethod(const Value& object, const std::string& name, const Args& args) {
  absl::StatusOr<Value> result = absl::NotFoundError("");
  if (object.is_string()) {
    result = StrMethod(object.str(), name, args);
  } else if (object.is_dict() && !object.is_namespace()) {
    result = DictMethod(object, name, args);
  }
  if (absl::IsNotFound(result.status())) {
    return Bad(absl::StrCat("a ", object.TypeName(), " has no method '", name, "'"));
  }
  return result;
}

bool IsFunction(const std::string& name) {
  return name == "namespace" || name == "range" || name == "raise_exception" || name == "dict" ||
         name == "strftime_now";
}

absl::StatusOr<Value> CallFunction(const std::string& name, const Args& args) {
  if (name == "namespace" || name == "dict") {
    Value::Dict items;
    if (!args.positional.empty()) {
      if (!args.positional[0].is_dict()) return Bad(absl::StrCat(name, "(): takes a dict"));
      items = args.positional[0].dict();
    }
    for (const auto& [k, v] : args.keyword) items.emplace_back(k, v);
    return name == "namespace" ? Value::NewNamespace(std::move(items))
                               : Value::NewDict(std::move(items));
  }
  if (name == "raise_exception") {
    return Bad(
        absl::StrCat("the chat template refused the request: ",
                     args.Get(0, "message").Render(kMaxErrorBytes).substr(0, kMaxErrorBytes)));
  }
  if (name == "range") {
    int64_t b = 0, e = 0, st = 1;
    std::vector<int64_t> v;
    for (const Value& a : args.positional) {
      absl::StatusOr<int64_t> i = ToInt(a, "range()'s arguments");
      if (!i.ok()) return i.status();
      v.push_back(*i);
    }
    if (v.empty() || v.size() > 3) return Bad("range() takes 1 to 3 arguments");
    if (v.size() == 1) {
      e = v[0];
    } else {
      b = v[0];
      e = v[1];
      if (v.size() == 3) st = v[2];
    }
    if (st == 0) return Bad("range() step must not be zero");
    Value::List items;
    // Sized once (growing a million-item list by doubling copied it ~20 times between two of the
    // render's bound checks).
    const __int128 span = st > 0 ? __int128{e} - b : __int128{b} - e;
    const __int128 step = st > 0 ? __int128{st} : -__int128{st};
    if (span > 0) {
      items.reserve(static_cast<size_t>(std::min<__int128>((span + step - 1) / step, kMaxItems)));
    }
    for (int64_t i = b; st > 0 ? i < e : i > e;) {
      if (static_cast<int64_t>(items.size()) >= kMaxItems) {
        return absl::ResourceExhaustedError(
            absl::StrCat("range() of more than ", kMaxItems, " items"));
      }
      items.push_back(Value::Int(i));
      if (__builtin_add_overflow(i, st, &i)) break;  // Past int64: past the end too.
    }
    return Value::NewList(std::move(items));
  }
  if (name == "strftime_now") {
    const Value format = args.Get(0, "format");
    if (!format.is_string()) return Bad("strftime_now: needs a format str");
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[256];
    const size_t n = std::strftime(buf, sizeof buf, format.str().c_str(), &tm);
    return Value::String(std::string(buf, n));
  }
  return Bad(absl::StrCat("unknown function '", name, "'"));
}

absl::StatusOr<Value> ApplyFilter(const std::string& name, const Value& value, const Args& args) {
  if (name == "length" || name == "count") {
    if (value.is_string()) return Value::Int(CodePoints(value.str()).size());
    if (value.is_list()) return Value::Int(value.list().size());
    if (value.is_dict()) return Value::Int(value.dict().size());
    return Bad(absl::StrCat("length: a ", value.TypeName(), " has no length"));
  }
  if (name == "tojson") {
    const Value indent = args.Get(0, "indent");
    absl::StatusOr<std::string> json =
        value.ToJson(indent.kind() == Value::Kind::kInt ? indent.int_value() : -1, args.max_bytes);
    if (!json.ok()) return json.status();
    return Value::String(*std::move(json));
  }
  if (name == "string" || name == "safe" || name == "e" || name == "escape") {
    // No autoescaping in chat templates: the escapes are the identity on text.
    if (value.is_string()) return value;
    std::string text = value.Render(args.max_bytes);
    if (absl::Status st = CheckBytes(text.size(), args.max_bytes, name); !st.ok()) return st;
    return Value::String(std::move(text));
  }
  if (name == "default" || name == "d") {
    const bool boolean = args.Get(1, "boolean").Truthy();
    if (value.is_undefined() || (boolean && !value.Truthy())) {
      const Value fallback = args.Get(0, "default_value");
      return fallback.is_undefined() ? Value::String("") : fallback;
    }
    return value;
  }
  if (name == "trim" || name == "upper" || name == "lower" || name == "title" ||
      name == "capitalize" || name == "replace") {
    if (!value.is_string()) return Bad(absl::StrCat(name, ": needs a str, not ", value.TypeName()));
    if (name == "trim") {
      absl::StatusOr<std::string> chars = StrArg(args, 0, "chars", name, "");
      if (!chars.ok()) return chars.status();
      return Value::String(Strip(value.str(), *chars, true, true));
    }
    return StrMethod(value.str(), name, args);
  }
  if (name == "first" || name == "last") {
    absl::StatusOr<Value::List> items = Iterate(value);
    if (!items.ok()) return items.status();
    if (items->empty()) return Value();
    return name == "first" ? items->front() : items->back();
  }
  if (name == "list") {
    absl::StatusOr<Value::List> items = Iterate(value);
    if (!items.ok()) return items.status();
    return Value::NewList(*std::move(items));
  }
  if (name == "reverse") {
    if (value.is_string()) return Slice(value, Value(), Value(), Value::Int(-1));
    absl::StatusOr<Value::List> items = Iterate(value);
    if (!items.ok()) return items.status();
    return Value::NewList(Value::List(items->rbegin(), items->rend()));
  }
  if (name == "items") {
    if (!value.is_dict()) return Bad(absl::StrCat("items: needs a dict, not ", value.TypeName()));
    return DictMethod(value, "items", args);
  }
  if (name == "join") {
    absl::StatusOr<Value::List> items = Iterate(value);
    if (!items.ok()) return items.status();
    absl::StatusOr<std::string> sep = StrArg(args, 0, "d", name, "");
    if (!sep.ok()) return sep.status();
    const Value attr = args.Get(1, "attribute");
    std::vector<std::string> parts;
    int64_t bytes = 0;
    for (const Value& item : *items) {
      Value v = item;
      if (!attr.is_undefined()) {
        absl::StatusOr<Value> a = Attribute(item, attr);
        if (!a.ok()) return a.status();
        v = *a;
      }
      parts.push_back(v.Render(args.max_bytes));
      bytes += static_cast<int64_t>(parts.back().size() + (parts.size() > 1 ? sep->size() : 0));
      if (absl::Status st = CheckBytes(bytes, args.max_bytes, name); !st.ok()) return st;
    }
    return Value::String(absl::StrJoin(parts, *sep));
  }
  if (name == "selectattr" || name == "rejectattr") {
    return SelectAttr(value, args, name == "selectattr");
  }
  if (name == "map") {
    const Value attr = args.Get(99, "attribute");
    absl::StatusOr<Value::List> items = Iterate(value);
    if (!items.ok()) return items.status();
    Value::List out;
    for (const Value& item : *items) {
      if (!attr.is_undefined()) {
        absl::StatusOr<Value> a = Attribute(item, attr);
        if (!a.ok()) return a.status();
        out.push_back(*a);
      } else if (!args.positional.empty() && args.positional[0].is_string()) {
        absl::StatusOr<Value> f =
            ApplyFilter(args.positional[0].str(), item, Args{.max_bytes = args.max_bytes});
        if (!f.ok()) return f.status();
        out.push_back(*f);
      } else {
        return Bad("map: needs attribute= or a filter name");
      }
    }
    return Value::NewList(std::move(out));
  }
  if (name == "int") {
    if (value.kind() == Value::Kind::kInt) return value;
    if (value.is_number()) {
      absl::StatusOr<int64_t> i = FloatToInt(value.number(), "int");
      if (!i.ok()) return i.status();
      return Value::Int(*i);
    }
    if (value.is_string()) {
      int64_t i = 0;
      return Value::Int(absl::SimpleAtoi(value.str(), &i) ? i : 0);
    }
    return Value::Int(0);
  }
  if (name == "float") {
    double f = 0;
    if (value.is_number()) return Value::Float(value.number());
    if (value.is_string() && absl::SimpleAtod(value.str(), &f)) return Value::Float(f);
    return Value::Float(0);
  }
  if (name == "abs") {
    if (value.kind() == Value::Kind::kInt) {
      if (value.int_value() == INT64_MIN) return Overflow("abs");
      return Value::Int(std::llabs(value.int_value()));
    }
    if (value.is_number()) return Value::Float(std::fabs(value.number()));
    return Bad("abs: needs a number");
  }
  return Bad(absl::StrCat("unknown filter '", name, "'"));
}

absl::StatusOr<bool> ApplyTest(const std::string& name, const Value& v, const Args& args) {
  const Value arg = args.Get(0, "other");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == Value::Kind::kInt;
  if (name == "float") return v.kind() == Value::Kind::kFloat;
  if (name == "boolean") return v.kind() == Value::Kind::kBool;
  if (name == "true") return v.kind() == Value::Kind::kBool && v.bool_value();
  if (name == "false") return v.kind() == Value::Kind::kBool && !v.bool_value();
  if (name == "mapping") return v.is_dict();
  if (name == "sequence") return v.is_list() || v.is_string() || v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_string() || v.is_dict();
  if (name == "callable") return false;
  if (name == "odd" || name == "even" || name == "divisibleby") {
    absl::StatusOr<int64_t> i = ToInt(v, absl::StrCat("the '", name, "' test's value"));
    if (!i.ok()) return i.status();
    if (name == "odd") return *i % 2 != 0;
    if (name == "even") return *i % 2 == 0;
    absl::StatusOr<int64_t> d = ToInt(arg, "divisibleby's argument");
    if (!d.ok()) return d.status();
    if (*d == -1) return true;  // INT64_MIN % -1 traps (SIGFPE); every int divides by -1.
    return *d != 0 && *i % *d == 0;
  }
  if (name == "sameas") {
    if (v.kind() != arg.kind()) return false;
    if (v.is_list() || v.is_dict()) return &v.list() == &arg.list() || v == arg;
    return v == arg;
  }
  static const std::pair<const char*, const char*> kCompare[] = {
      {"eq", "=="}, {"equalto", "=="},    {"ne", "!="}, {"lt", "<"},  {"lessthan", "<"},
      {"gt", ">"},  {"greaterthan", ">"}, {"le", "<="}, {"ge", ">="}, {"in", "in"}};
  for (const auto& [test, op] : kCompare) {
    if (name == test) {
      absl::StatusOr<Value> r = BinaryOp(op, v, arg, args.max_bytes);
      if (!r.ok()) return r.status();
      return r->Truthy();
    }
  }
  return Bad(absl::StrCat("unknown test '", name, "'"));
}

absl::StatusOr<Value> BinaryOp(const std::string& op, const Value& a, const Value& b,
                               int64_t max_bytes) {
  if (op == "==") return Value::Bool(a == b);
  if (op == "!=") return Value::Bool(a != b);
  if (op == "~") {
    // A string on the left grows in place (value.h): `s = s ~ piece` in a loop is linear.
    const Value left = a.is_string() ? a : Value::String(a.Render(max_bytes));
    if (absl::Status st = CheckBytes(left.str().size(), max_bytes, op); !st.ok()) return st;
    if (b.is_string()) {
      if (absl::Status st = CheckBytes(left.str().size() + b.str().size(), max_bytes, op);
          !st.ok()) {
        return st;
      }
      return Value::Concat(left, b.str());
    }
    const std::string right = b.Render(max_bytes);
    if (absl::Status st = CheckBytes(left.str().size() + right.size(), max_bytes, op); !st.ok()) {
      return st;
    }
    return Value::Concat(left, right);
  }
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.is_string()) {
      if (!a.is_string())
        return Bad(absl::StrCat("'in <str>' needs a str on the left, not ", a.TypeName()));
      found = b.str().find(a.str()) != std::string::npos;
      AddThreadWork(static_cast<int64_t>(b.str().size()));
    } else if (b.is_list()) {
      AddThreadWork(static_cast<int64_t>(b.list().size()));
      for (const Value& item : b.list()) found = found || item == a;
    } else if (b.is_dict()) {
      found = a.is_string() && !b.Get(a.str()).is_undefined();
    } else {
      return Bad(absl::StrCat("'in' needs a str, list or dict on the right, not ", b.TypeName()));
    }
    return Value::Bool(found == (op == "in"));
  }
  const bool ints = a.kind() == Value::Kind::kInt && b.kind() == Value::Kind::kInt;
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (absl::Status st = CheckBytes(a.str().size() + b.str().size(), max_bytes, op); !st.ok()) {
        return st;
      }
      return Value::Concat(a, b.str());  // In place where `a` ends its buffer (value.h).
    }
    if (a.is_list() && b.is_list()) {
      if (static_cast<int64_t>(a.list().size() + b.list().size()) > kMaxItems) {
        return absl::ResourceExhaustedError(
            absl::StrCat("a list of more than ", kMaxItems, " items"));
      }
      return Value::ConcatList(a, b);  // In place where `a` ends its storage (value.h).
    }
  }
  if (op == "*" && (a.is_string() || a.is_list()) && b.kind() == Value::Kind::kInt) {
    const int64_t n = std::max<int64_t>(0, b.int_value());
    const int64_t size = a.is_string() ? a.str().size() : a.list().size();
    // Divided, not multiplied: size * n overflows for n near 2^63.
    const int64_t cap = a.is_string() ? std::min(kMaxItems, max_bytes) : kMaxItems;
    if (size > 0 && n > cap / size) {
      return absl::ResourceExhaustedError(
          absl::StrCat("a repetition of more than ", cap, a.is_string() ? " bytes" : " items"));
    }
    if (a.is_string()) {
      std::string out;
      for (int64_t i = 0; i < n; ++i) out += a.str();
      return Value::String(out);
    }
    Value::List items;
    for (int64_t i = 0; i < n; ++i) items.insert(items.end(), a.list().begin(), a.list().end());
    return Value::NewList(std::move(items));
  }
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    int c = 0;
    if (a.is_number() && b.is_number()) {
      c = a.number() < b.number() ? -1 : a.number() > b.number() ? 1 : 0;
    } else if (a.is_string() && b.is_string()) {
      AddThreadWork(static_cast<int64_t>(std::min(a.str().size(), b.str().size())));
      c = a.str().compare(b.str());
    } else {
      return Bad(absl::StrCat("cannot compare a ", a.TypeName(), " with a ", b.TypeName()));
    }
    if (op == "<") return Value::Bool(c < 0);
    if (op == ">") return Value::Bool(c > 0);
    if (op == "<=") return Value::Bool(c <= 0);
    return Value::Bool(c >= 0);
  }
  if (!a.is_number() || !b.is_number()) {
    return Bad(absl::StrCat("unsupported operand types for ", op, ": ", a.TypeName(), " and ",
                            b.TypeName()));
  }
  const double x = a.number(), y = b.number();
  if (ints && (op == "+" || op == "-" || op == "*")) {
    int64_t r = 0;
    const int64_t p = a.int_value(), q = b.int_value();
    const bool overflow = op == "+"   ? __builtin_add_overflow(p, q, &r)
                          : op == "-" ? __builtin_sub_overflow(p, q, &r)
                                      : __builtin_mul_overflow(p, q, &r);
    if (overflow) return Overflow(op);
    return Value::Int(r);
  }
  if (op == "+") return Value::Float(x + y);
  if (op == "-") return Value::Float(x - y);
  if (op == "*") return Value::Float(x * y);
  if (op == "/") {
    if (y == 0) return Bad("division by zero");
    return Value::Float(x / y);
  }
  if (op == "//" || op == "%") {
    if (y == 0) return Bad(op == "//" ? "integer division by zero" : "modulo by zero");
    if (ints) {
      const int64_t p = a.int_value(), q = b.int_value();
      if (p == INT64_MIN && q == -1) {  // The one quotient past 64 bits (it traps: SIGFPE).
        if (op == "%") return Value::Int(0);
        return Overflow(op);
      }
      // Python floors: the quotient rounds down and the remainder takes the divisor's sign.
      // Neither step can overflow (p - d * q could: 1 % INT64_MIN).
      int64_t d = p / q, r = p % q;
      if (r != 0 && ((r < 0) != (q < 0))) {
        --d;
        r += q;
      }
      return op == "//" ? Value::Int(d) : Value::Int(r);
    }
    const double d = std::floor(x / y);
    return op == "//" ? Value::Float(d) : Value::Float(x - d * y);
  }
  if (op == "**") {
    if (ints && b.int_value() >= 0) {
      const double r = std::pow(x, y);
      if (std::fabs(r) < 9.2e18) return Value::Int(static_cast<int64_t>(std::llround(r)));
    }
    return Value::Float(std::pow(x, y));
  }
  return Bad(absl::StrCat("unknown operator '", op, "'"));
}

}  // namespace semmoe::engine::jinja
