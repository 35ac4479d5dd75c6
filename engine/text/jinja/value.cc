#include "engine/text/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace semmoe::engine::jinja {
namespace {

// json.dumps' string: ASCII control characters escaped, everything else as is
// (ensure_ascii=False).
void AppendJsonString(const std::string& s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

std::string JsonFloat(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
  return FormatFloat(f);
}

// Deeper values (a list a template nested in a loop, a namespace holding itself) are cut off:
// printing or comparing them must not overflow the stack.
constexpr int kMaxValueDepth = 256;

absl::Status TooLong(int64_t max_bytes) {
  return absl::ResourceExhaustedError(
      absl::StrCat("tojson: the text passes the template's output cap of ", max_bytes, " bytes"));
}

absl::Status AppendJson(const Value& v, int64_t indent, int depth, int64_t max_bytes,
                        std::string* out) {
  if (depth > kMaxValueDepth)
    return absl::InvalidArgumentError("tojson: the value nests too deeply");
  // The indentation alone may pass the cap (tojson(indent=10**9)): checked before it is built.
  // indent ≤ 2^31 and depth ≤ 257, so the product cannot overflow.
  if (indent >= 0 && static_cast<int64_t>(out->size()) + indent * (depth + 1) > max_bytes) {
    return TooLong(max_bytes);
  }
  const std::string newline =
      indent < 0 ? "" : "\n" + std::string(static_cast<size_t>(indent) * (depth + 1), ' ');
  const std::string close =
      indent < 0 ? "" : "\n" + std::string(static_cast<size_t>(indent) * depth, ' ');
  const char* item_sep = indent < 0 ? ", " : ",";
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return absl::InvalidArgumentError("tojson: the value is undefined");
    case Value::Kind::kNone:
      out->append("null");
      break;
    case Value::Kind::kBool:
      out->append(v.bool_value() ? "true" : "false");
      break;
    case Value::Kind::kInt:
      absl::StrAppend(out, v.int_value());
      break;
    case Value::Kind::kFloat:
      out->append(JsonFloat(v.number()));
      break;
    case Value::Kind::kString:
      AppendJsonString(v.str(), out);
      break;
    case Value::Kind::kList: {
      if (v.list().empty()) {
        out->append("[]");
        break;
      }
      out->push_back('[');
      for (size_t i = 0; i < v.list().size(); ++i) {
        if (i > 0) out->append(item_sep);
        out->append(newline);
        absl::Status s = AppendJson(v.list()[i], indent, depth + 1, max_bytes, out);
        if (!s.ok()) return s;
        if (static_cast<int64_t>(out->size()) > max_bytes) return TooLong(max_bytes);
      }
      out->append(close);
      out->push_back(']');
      break;
    }
    case Value::Kind::kDict: {
      if (v.is_namespace()) return absl::InvalidArgumentError("tojson: a namespace");
      if (v.dict().empty()) {
        out->append("{}");
        break;
      }
      out->push_back('{');
      for (size_t i = 0; i < v.dict().size(); ++i) {
        if (i > 0) out->append(item_sep);
        out->append(newline);
        AppendJsonString(v.dict()[i].first, out);
        out->append(": ");
        absl::Status s = AppendJson(v.dict()[i].second, indent, depth + 1, max_bytes, out);
        if (!s.ok()) return s;
        if (static_cast<int64_t>(out->size()) > max_bytes) return TooLong(max_bytes);
      }
      out->append(close);
      out->push_back('}');
      break;
    }
  }
  return absl::OkStatus();
}

// Python's repr of a str: single quotes unless it holds ' and no ".
std::string ReprString(const std::string& s) {
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') {
      out.append("\\\\");
    } else if (c == static_cast<unsigned char>(q)) {
      out.push_back('\\');
      out.push_back(q);
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (c == '\t') {
      out.append("\\t");
    } else if (c < 0x20 || c == 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back(q);
  return out;
}

}  // namespace

std::string FormatFloat(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  // Python switches to an exponent below 1e-4 and from 1e16; to_chars' shortest form picks
  // by length, so the notation is chosen here and only the digits are left to it.
  const double a = std::fabs(f);
  const bool sci = a != 0 && (a < 1e-4 || a >= 1e16);
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, f,
                           sci ? std::chars_format::scientific : std::chars_format::fixed);
  std::string s(buf, res.ptr);
  if (sci) {
    // to_chars: "1e-05" already has Python's two-digit exponent; "1e+16" too.
    const size_t e = s.find('e');
    if (e != std::string::npos && s.size() - e == 3) s.insert(e + 2, "0");
    return s;
  }
  if (s.find('.') == std::string::npos) s.append(".0");
  return s;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}
namespace {
thread_local int64_t thread_work = 0;
}  // namespace

int64_t ThreadWork() { return thread_work; }
void AddThreadWork(int64_t units) { thread_work += units; }

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  thread_work += static_cast<int64_t>(s.size());
  v.slen_ = s.size();
  if (!s.empty()) v.sbuf_ = std::make_shared<std::string>(std::move(s));
  return v;
}

const std::string& Value::str() const {
  static const std::string* const kEmpty = new std::string();
  if (kind_ != Kind::kString || sbuf_ == nullptr) return *kEmpty;
  if (sbuf_->size() != slen_) {
    // The buffer grew past this value (a later `+` on it): this value's own copy, once.
    thread_work += static_cast<int64_t>(slen_);
    sbuf_ = std::make_shared<std::string>(*sbuf_, 0, slen_);
    sgrow_ = true;
  }
  return *sbuf_;
}

Value Value::Concat(const Value& a, std::string_view text) {
  Value v;
  v.kind_ = Kind::kString;
  if (a.sgrow_ && a.sbuf_ != nullptr && a.sbuf_->size() == a.slen_) {
    // `a` ends its buffer: append in place (amortised by std::string's geometric growth). `text`
    // may be a view of this same buffer (x + x): copied first, as the append may move it.
    std::string& buf = *a.sbuf_;
    const std::less<const char*> before;
    if (!text.empty() && !before(text.data(), buf.data()) &&
        before(text.data(), buf.data() + buf.capacity())) {
      const std::string copy(text);
      buf.append(copy);
    } else {
      buf.append(text);
    }
    thread_work += static_cast<int64_t>(text.size());
    v.sbuf_ = a.sbuf_;
  } else {
    const std::string& head = a.str();
    auto buf = std::make_shared<std::string>();
    buf->reserve(head.size() + text.size());
    buf->append(head).append(text);
    thread_work += static_cast<int64_t>(buf->size());
    v.sbuf_ = std::move(buf);
  }
  v.slen_ = v.sbuf_->size();
  v.sgrow_ = true;
  return v;
}

Value Value::NewList(List items) {
  thread_work += static_cast<int64_t>(items.size());
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<List>(std::move(items));
  v.llen_ = v.list_->size();
  return v;
}

Value::List& Value::list() const {
  if (list_->size() != llen_) {
    // The storage grew past this value (a later `+` on it): this value's own copy, once.
    thread_work += static_cast<int64_t>(llen_);
    list_ = std::make_shared<List>(list_->begin(), list_->begin() + llen_);
    lgrow_ = true;
  }
  return *list_;
}

Value Value::ConcatList(const Value& a, const Value& b) {
  Value v;
  v.kind_ = Kind::kList;
  const List& tail = b.list();  // Materialised first: `b` may view `a`'s storage.
  if (a.lgrow_ && a.list_->size() == a.llen_) {
    if (b.list_ == a.list_) {  // xs + xs: the items copied first, as the append may move them.
      const List copy(tail);
      a.list_->insert(a.list_->end(), copy.begin(), copy.end());
    } else {
      a.list_->insert(a.list_->end(), tail.begin(), tail.end());
    }
    thread_work += static_cast<int64_t>(tail.size());
    v.list_ = a.list_;
  } else {
    const List& head = a.list();
    auto items = std::make_shared<List>();
    items->reserve(head.size() + tail.size());
    items->insert(items->end(), head.begin(), head.end());
    items->insert(items->end(), tail.begin(), tail.end());
    thread_work += static_cast<int64_t>(items->size());
    v.list_ = std::move(items);
  }
  v.llen_ = v.list_->size();
  v.lgrow_ = true;
  return v;
}
Value Value::NewDict(Dict items) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>(std::move(items));
  return v;
}
Value Value::NewNamespace(Dict items) {
  Value v = NewDict(std::move(items));
  v.namespace_ = true;
  return v;
}

absl::StatusOr<Value> Value::FromJson(const nlohmann::ordered_json& json, int max_depth) {
  if (max_depth < 0) return absl::InvalidArgumentError("JSON nested too deeply");
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return None();
    case nlohmann::ordered_json::value_t::boolean:
      return Bool(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Int(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Float(static_cast<double>(u));
      return Int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Float(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return String(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& item : json) {
        absl::StatusOr<Value> v = FromJson(item, max_depth - 1);
        if (!v.ok()) return v.status();
        items.push_back(*std::move(v));
      }
      return NewList(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict items;
      for (const auto& [key, item] : json.items()) {
        absl::StatusOr<Value> v = FromJson(item, max_depth - 1);
        if (!v.ok()) return v.status();
        items.emplace_back(key, *std::move(v));
      }
      return NewDict(std::move(items));
    }
    default:
      return absl::InvalidArgumentError("unsupported JSON value (binary or discarded)");
  }
}

Value Value::Get(const std::string& key) const {
  if (kind_ != Kind::kDict) return Value();
  int64_t scanned = 0;
  for (const auto& [k, v] : *dict_) {
    ++scanned;
    if (k == key) {
      thread_work += scanned;
      return v;
    }
  }
  thread_work += scanned;
  return Value();
}

void Value::Set(const std::string& key, Value v) const {
  thread_work += static_cast<int64_t>(dict_->size());
  for (auto& [k, old] : *dict_) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  dict_->emplace_back(key, std::move(v));
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0;
    case Kind::kString:
      return slen_ != 0;
    case Kind::kList:
      return llen_ != 0;
    case Kind::kDict:
      return namespace_ || !dict_->empty();
  }
  return false;
}

std::string Value::Render(int64_t max_bytes) const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return str();
    default:
      return Repr(max_bytes);
  }
}

std::string Value::Repr(int64_t max_bytes) const {
  std::string out;
  AppendRepr(0, max_bytes, &out);
  return out;
}

void Value::AppendRepr(int depth, int64_t max_bytes, std::string* out) const {
  // Once past the cap the caller refuses the text: stop growing it (a list of a million
  // references to one long string must not be written out in full).
  if (static_cast<int64_t>(out->size()) > max_bytes) return;
  if (depth > kMaxValueDepth && (kind_ == Kind::kList || kind_ == Kind::kDict)) {
    out->append(kind_ == Kind::kList ? "[...]" : "{...}");
    return;
  }
  switch (kind_) {
    case Kind::kUndefined:
      return;
    case Kind::kNone:
      out->append("None");
      return;
    case Kind::kBool:
      out->append(b_ ? "True" : "False");
      return;
    case Kind::kInt:
      absl::StrAppend(out, i_);
      return;
    case Kind::kFloat:
      out->append(FormatFloat(f_));
      return;
    case Kind::kString:
      out->append(ReprString(str()));
      return;
    case Kind::kList: {
      out->push_back('[');
      const List& items = list();
      for (size_t i = 0; i < items.size() && static_cast<int64_t>(out->size()) <= max_bytes; ++i) {
        if (i > 0) out->append(", ");
        items[i].AppendRepr(depth + 1, max_bytes, out);
      }
      out->push_back(']');
      return;
    }
    case Kind::kDict:
      out->append(namespace_ ? "<Namespace {" : "{");
      for (size_t i = 0; i < dict_->size() && static_cast<int64_t>(out->size()) <= max_bytes; ++i) {
        if (i > 0) out->append(", ");
        absl::StrAppend(out, ReprString((*dict_)[i].first), ": ");
        (*dict_)[i].second.AppendRepr(depth + 1, max_bytes, out);
      }
      out->append(namespace_ ? "}>" : "}");
      return;
  }
}

absl::StatusOr<std::string> Value::ToJson(int64_t indent, int64_t max_bytes) const {
  std::string out;
  if (absl::Status s = AppendJson(*this, std::min<int64_t>(indent, INT32_MAX), 0, max_bytes, &out);
      !s.ok())
    return s;
  return out;
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kNone:
      return "none";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return namespace_ ? "namespace" : "dict";
  }
  return "?";
}

bool operator==(const Value& a, const Value& b) { return Value::Equal(a, b, 0); }

bool Value::Equal(const Value& a, const Value& b, int depth) {
  if (depth > kMaxValueDepth) return false;
  if (a.is_number() && b.is_number()) {
    if (a.kind_ == Value::Kind::kInt && b.kind_ == Value::Kind::kInt) return a.i_ == b.i_;
    return a.number() == b.number();
  }
  // Python: True == 1; keep bools apart from numbers otherwise.
  if (a.kind_ != b.kind_) {
    if (a.kind_ == Value::Kind::kBool && b.is_number()) return (a.b_ ? 1 : 0) == b.number();
    if (b.kind_ == Value::Kind::kBool && a.is_number()) return (b.b_ ? 1 : 0) == a.number();
    return false;
  }
  switch (a.kind_) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kBool:
      return a.b_ == b.b_;
    case Value::Kind::kString:
      thread_work += static_cast<int64_t>(std::min(a.slen_, b.slen_));
      return a.slen_ == b.slen_ && a.str() == b.str();
    case Value::Kind::kList: {
      const List& x = a.list();
      const List& y = b.list();
      thread_work += static_cast<int64_t>(x.size());
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Equal(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.dict_->size() != b.dict_->size()) return false;
      for (const auto& [k, v] : *a.dict_) {
        if (!Equal(b.Get(k), v, depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace semmoe::engine::jinja
