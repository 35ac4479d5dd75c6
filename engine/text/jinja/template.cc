#include "engine/text/jinja/template.h"

#include <unordered_map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/text/jinja/builtins.h"
#include "engine/text/jinja/parser.h"

namespace semmoe::engine::jinja {
namespace {

enum class Flow { kNormal, kBreak, kContinue };

absl::Status AtLine(int line, const absl::Status& s) {
  if (s.ok() || absl::StartsWith(s.message(), "template line ")) return s;
  return absl::Status(s.code(), absl::StrCat("template line ", line, ": ", s.message()));
}

class Renderer {
 public:
  Renderer(const Value& variables, const RenderLimits& limits) : limits_(limits) {
    scopes_.emplace_back();
    if (variables.is_dict()) {
      for (const auto& [k, v] : variables.dict()) scopes_.back()[k] = v;
    }
  }

  // Namespaces are the only values a template can change after making them, so every
  // reference cycle (`{% set ns.me = ns %}`) runs through one: emptying them at the end frees
  // everything the render made.
  ~Renderer() {
    for (Value& ns : namespaces_) ns.dict().clear();
  }

  absl::StatusOr<std::string> Run(const Body& body) {
    absl::StatusOr<Flow> flow = Exec(body);
    if (!flow.ok()) return flow.status();
    return std::move(out_);
  }

 private:
  absl::Status Step(int line) {
    if (++steps_ > limits_.max_steps) {
      return absl::ResourceExhaustedError(absl::StrCat("template line ", line,
                                                       ": the chat template ran more than ",
                                                       limits_.max_steps, " steps"));
    }
    return CheckWork(line);
  }

  // The work, deadline and cancel bounds: work at every call (one thread-local read), the clock
  // and the flag every 64 steps or 1 MiB of work.
  absl::Status CheckWork(int line) {
    const int64_t work = ThreadWork() - work_start_;
    if (work > limits_.max_work) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "template line ", line, ": the chat template did more than ", limits_.max_work,
          " units of work (bytes built or copied, items scanned): it grows or searches in a "
          "way that is quadratic in its input"));
    }
    if (steps_ < next_clock_step_ && work < next_clock_work_) return absl::OkStatus();
    next_clock_step_ = steps_ + 64;
    next_clock_work_ = work + (1 << 20);
    if (limits_.cancel != nullptr && limits_.cancel->load(std::memory_order_relaxed)) {
      return absl::CancelledError(
          absl::StrCat("template line ", line, ": the chat template's render was cancelled"));
    }
    if (limits_.deadline != absl::InfiniteFuture() && absl::Now() > limits_.deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("template line ", line, ": the chat template ran past its deadline"));
    }
    return absl::OkStatus();
  }

  absl::Status Write(const std::string& s, int line) {
    if (static_cast<int64_t>(out_.size() + s.size()) > limits_.max_output_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("template line ", line,
                                                       ": the chat template wrote more than ",
                                                       limits_.max_output_bytes, " bytes"));
    }
    out_ += s;
    return absl::OkStatus();
  }

  Value Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return Value();
  }

  absl::StatusOr<Flow> Exec(const Body& body) {
    for (const auto& s : body) {
      absl::StatusOr<Flow> flow = ExecOne(*s);
      if (!flow.ok() || *flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  absl::StatusOr<Flow> ExecOne(const Stmt& s) {
    if (absl::Status st = Step(s.line); !st.ok()) return st;
    switch (s.kind) {
      case Stmt::Kind::kText:
        if (absl::Status st = Write(s.text, s.line); !st.ok()) return st;
        return Flow::kNormal;
      case Stmt::Kind::kOutput: {
        absl::StatusOr<Value> v = Eval(*s.expr);
        if (!v.ok()) return v.status();
        if (absl::Status st = Write(v->Render(limits_.max_output_bytes), s.line); !st.ok()) {
          return st;
        }
        return Flow::kNormal;
      }
      case Stmt::Kind::kIf:
        for (size_t i = 0; i < s.conditions.size(); ++i) {
          absl::StatusOr<Value> c = Eval(*s.conditions[i]);
          if (!c.ok()) return c.status();
          if (c->Truthy()) return Exec(s.bodies[i]);
        }
        return Exec(s.else_body);
      case Stmt::Kind::kFor:
        return ExecFor(s);
      case Stmt::Kind::kSet:
        return ExecSet(s);
      case Stmt::Kind::kBreak:
        if (loops_ == 0) return AtLine(s.line, absl::InvalidArgumentError("break outside a loop"));
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        if (loops_ == 0) {
          return AtLine(s.line, absl::InvalidArgumentError("continue outside a loop"));
        }
        return Flow::kContinue;
      case Stmt::Kind::kBlock:
        return Exec(s.body);
    }
    return Flow::kNormal;
  }

  absl::Status Assign(const std::vector<std::string>& targets, const Value& v, int line,
                      std::unordered_map<std::string, Value>& scope) {
    if (targets.size() == 1) {
      scope[targets[0]] = v;
      return absl::OkStatus();
    }
    absl::StatusOr<Value::List> items = Iterate(v);
    if (!items.ok()) return AtLine(line, items.status());
    if (items->size() != targets.size()) {
      return AtLine(line, absl::InvalidArgumentError(absl::StrCat(
                              "cannot unpack ", items->size(), " values into ", targets.size())));
    }
    for (size_t i = 0; i < targets.size(); ++i) scope[targets[i]] = (*items)[i];
    return absl::OkStatus();
  }

  absl::StatusOr<Flow> ExecFor(const Stmt& s) {
    absl::StatusOr<Value> iterable = Eval(*s.expr);
    if (!iterable.ok()) return iterable.status();
    // A list is iterated where it is, by index (the body may grow its storage in place: value.h),
    // not copied: a copy of a million-item range between two bound checks kept a cancelled or
    // late render running for seconds on a loaded host. Dicts and strings become a list.
    Value source = *iterable;
    if (!source.is_list()) {
      absl::StatusOr<Value::List> all = Iterate(source);
      if (!all.ok()) return AtLine(s.line, all.status());
      source = Value::NewList(*std::move(all));
    }
    // The `if` filter runs first: loop.* counts only the items it keeps.
    if (s.condition != nullptr) {
      Value::List kept;
      for (size_t i = 0; i < source.list().size(); ++i) {
        const Value item = source.list()[i];
        scopes_.emplace_back();
        absl::Status st = Assign(s.targets, item, s.line, scopes_.back());
        absl::StatusOr<Value> keep = st.ok() ? Eval(*s.condition) : absl::StatusOr<Value>(st);
        scopes_.pop_back();
        if (!keep.ok()) return keep.status();
        if (keep->Truthy()) kept.push_back(item);
      }
      source = Value::NewList(std::move(kept));
    }
    const int64_t n = static_cast<int64_t>(source.list().size());
    if (n == 0) return Exec(s.else_body);
    ++loops_;
    for (int64_t i = 0; i < n; ++i) {
      if (absl::Status st = Step(s.line); !st.ok()) return st;
      const Value item = source.list()[i];
      scopes_.emplace_back();
      auto& scope = scopes_.back();
      Value loop = Value::NewDict({{"index", Value::Int(i + 1)},
                                   {"index0", Value::Int(i)},
                                   {"revindex", Value::Int(n - i)},
                                   {"revindex0", Value::Int(n - i - 1)},
                                   {"first", Value::Bool(i == 0)},
                                   {"last", Value::Bool(i == n - 1)},
                                   {"length", Value::Int(n)},
                                   {"previtem", i > 0 ? source.list()[i - 1] : Value()},
                                   {"nextitem", i + 1 < n ? source.list()[i + 1] : Value()}});
      scope["loop"] = loop;
      if (absl::Status st = Assign(s.targets, item, s.line, scope); !st.ok()) return st;
      absl::StatusOr<Flow> flow = Exec(s.body);
      scopes_.pop_back();
      if (!flow.ok()) return flow;
      if (*flow == Flow::kBreak) break;
    }
    --loops_;
    return Flow::kNormal;
  }

  absl::StatusOr<Flow> ExecSet(const Stmt& s) {
    Value v;
    if (s.expr == nullptr) {  // {% set x %}...{% endset %}: the body's output.
      std::string saved = std::move(out_);
      out_.clear();
      absl::StatusOr<Flow> flow = Exec(s.body);
      std::string captured = std::move(out_);
      out_ = std::move(saved);
      if (!flow.ok()) return flow;
      v = Value::String(std::move(captured));
    } else {
      absl::StatusOr<Value> e = Eval(*s.expr);
      if (!e.ok()) return e.status();
      v = *std::move(e);
    }
    if (!s.attr.empty()) {
      const Value target = Lookup(s.targets[0]);
      if (!target.is_namespace()) {
        return AtLine(s.line, absl::InvalidArgumentError(absl::StrCat(
                                  "cannot set '", s.targets[0], ".", s.attr, "': '", s.targets[0],
                                  "' is a ", target.TypeName(), ", not a namespace()")));
      }
      target.Set(s.attr, std::move(v));
      return Flow::kNormal;
    }
    if (absl::Status st = Assign(s.targets, v, s.line, scopes_.back()); !st.ok()) return st;
    return Flow::kNormal;
  }

  absl::StatusOr<Args> EvalArgs(const Expr& e) {
    Args args;
    args.max_bytes = limits_.max_output_bytes;
    for (const auto& item : e.items) {
      absl::StatusOr<Value> v = Eval(*item);
      if (!v.ok()) return v.status();
      args.positional.push_back(*std::move(v));
    }
    for (const auto& [key, item] : e.kwargs) {
      absl::StatusOr<Value> v = Eval(*item);
      if (!v.ok()) return v.status();
      args.keyword.emplace_back(key, *std::move(v));
    }
    return args;
  }

  absl::StatusOr<Value> Eval(const Expr& e) {
    if (absl::Status st = Step(e.line); !st.ok()) return st;
    absl::StatusOr<Value> v = EvalInner(e);
    if (!v.ok()) return AtLine(e.line, v.status());
    if (absl::Status st = CheckWork(e.line); !st.ok()) return st;
    // Every string a template makes is bounded by the output cap (each builtin refuses to build
    // a longer one; this catches any that grows without one).
    if (v->is_string() && static_cast<int64_t>(v->str().size()) > limits_.max_output_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("template line ", e.line, ": a string of more than ",
                       limits_.max_output_bytes, " bytes (the template's output cap)"));
    }
    return v;
  }

  absl::StatusOr<Value> EvalInner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return Lookup(e.name);
      case Expr::Kind::kList:
      case Expr::Kind::kDict: {
        Value::List items;
        for (const auto& item : e.items) {
          absl::StatusOr<Value> v = Eval(*item);
          if (!v.ok()) return v;
          items.push_back(*std::move(v));
        }
        if (e.kind == Expr::Kind::kList) return Value::NewList(std::move(items));
        Value dict = Value::NewDict();
        for (size_t i = 0; i < e.keys.size(); ++i) {
          absl::StatusOr<Value> k = Eval(*e.keys[i]);
          if (!k.ok()) return k;
          if (!k->is_string()) return absl::InvalidArgumentError("dict keys must be strings");
          dict.Set(k->str(), items[i]);
        }
        return dict;
      }
      case Expr::Kind::kAttr: {
        absl::StatusOr<Value> object = Eval(*e.object);
        if (!object.ok()) return object;
        if (object->is_undefined()) {
          return absl::InvalidArgumentError(
              absl::StrCat("'", Describe(*e.object), "' is undefined (reading .", e.name, ")"));
        }
        return object->Get(e.name);  // Undefined for a missing key or a non-dict.
      }
      case Expr::Kind::kIndex: {
        absl::StatusOr<Value> object = Eval(*e.object);
        if (!object.ok()) return object;
        absl::StatusOr<Value> index = Eval(*e.items[0]);
        if (!index.ok()) return index;
        if (object->is_undefined()) {
          return absl::InvalidArgumentError(
              absl::StrCat("'", Describe(*e.object), "' is undefined (subscripted)"));
        }
        return Subscript(*object, *index);
      }
      case Expr::Kind::kSlice: {
        absl::StatusOr<Value> object = Eval(*e.object);
        if (!object.ok()) return object;
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (e.items[i] == nullptr) continue;
          absl::StatusOr<Value> v = Eval(*e.items[i]);
          if (!v.ok()) return v;
          parts[i] = *std::move(v);
        }
        return Slice(*object, parts[0], parts[1], parts[2]);
      }
      case Expr::Kind::kCall:
        return EvalCall(e);
      case Expr::Kind::kFilter: {
        absl::StatusOr<Value> object = Eval(*e.object);
        if (!object.ok()) return object;
        absl::StatusOr<Args> args = EvalArgs(e);
        if (!args.ok()) return args.status();
        return ApplyFilter(e.name, *object, *args);
      }
      case Expr::Kind::kTest: {
        absl::StatusOr<Value> object = Eval(*e.object);
        if (!object.ok()) return object;
        absl::StatusOr<Args> args = EvalArgs(e);
        if (!args.ok()) return args.status();
        absl::StatusOr<bool> result = ApplyTest(e.name, *object, *args);
        if (!result.ok()) return result.status();
        return Value::Bool(*result != e.negated);
      }
      case Expr::Kind::kUnary: {
        absl::StatusOr<Value> v = Eval(*e.object);
        if (!v.ok()) return v;
        if (e.name == "not") return Value::Bool(!v->Truthy());
        if (!v->is_number()) {
          return absl::InvalidArgumentError(
              absl::StrCat("unary '", e.name, "' on a ", v->TypeName()));
        }
        if (e.name == "+") return v;
        if (v->kind() != Value::Kind::kInt) return Value::Float(-v->number());
        if (v->int_value() == INT64_MIN) {
          return absl::InvalidArgumentError("integer overflow in unary '-'");
        }
        return Value::Int(-v->int_value());
      }
      case Expr::Kind::kBinary: {
        absl::StatusOr<Value> a = Eval(*e.object);
        if (!a.ok()) return a;
        if (e.name == "and") return a->Truthy() ? Eval(*e.items[0]) : a;
        if (e.name == "or") return a->Truthy() ? a : Eval(*e.items[0]);
        absl::StatusOr<Value> b = Eval(*e.items[0]);
        if (!b.ok()) return b;
        if ((a->is_undefined() || b->is_undefined()) && e.name != "~" && e.name != "==" &&
            e.name != "!=") {
          const Expr& which = a->is_undefined() ? *e.object : *e.items[0];
          return absl::InvalidArgumentError(
              absl::StrCat("'", Describe(which), "' is undefined (operator '", e.name, "')"));
        }
        return BinaryOp(e.name, *a, *b, limits_.max_output_bytes);
      }
      case Expr::Kind::kCond: {
        absl::StatusOr<Value> c = Eval(*e.object);
        if (!c.ok()) return c;
        if (c->Truthy()) return Eval(*e.items[0]);
        if (e.items[1] == nullptr) return Value();
        return Eval(*e.items[1]);
      }
    }
    return absl::InternalError("unknown expression");
  }

  absl::StatusOr<Value> EvalCall(const Expr& e) {
    absl::StatusOr<Args> args = EvalArgs(e);
    if (!args.ok()) return args.status();
    const Expr& callee = *e.object;
    if (callee.kind == Expr::Kind::kAttr) {  // A method: s.startswith(...), d.items()
      absl::StatusOr<Value> object = Eval(*callee.object);
      if (!object.ok()) return object;
      if (object->is_undefined()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", Describe(*callee.object), "' is undefined (calling .", callee.name, "())"));
      }
      return CallMethod(*object, callee.name, *args);
    }
    if (callee.kind == Expr::Kind::kName && Lookup(callee.name).is_undefined() &&
        IsFunction(callee.name)) {
      absl::StatusOr<Value> v = CallFunction(callee.name, *args);
      if (v.ok() && v->is_namespace()) namespaces_.push_back(*v);
      return v;
    }
    return absl::InvalidArgumentError(absl::StrCat("'", Describe(callee), "' is not callable"));
  }

  // A short name for an expression in errors: `message.content`, `messages[...]`.
  static std::string Describe(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kName:
        return e.name;
      case Expr::Kind::kAttr:
        return absl::StrCat(Describe(*e.object), ".", e.name);
      case Expr::Kind::kIndex:
        return absl::StrCat(Describe(*e.object), "[...]");
      case Expr::Kind::kCall:
        return absl::StrCat(Describe(*e.object), "(...)");
      default:
        return "expression";
    }
  }

  const RenderLimits limits_;
  std::vector<std::unordered_map<std::string, Value>> scopes_;
  std::string out_;
  std::vector<Value> namespaces_;  // Made by this render (emptied at its end).
  int64_t steps_ = 0;
  const int64_t work_start_ = ThreadWork();  // This thread's work before the render.
  int64_t next_clock_step_ = 0;              // When CheckWork next reads the clock.
  int64_t next_clock_work_ = 0;
  int loops_ = 0;
};

}  // namespace

absl::StatusOr<Template> Template::Parse(std::string_view source) {
  absl::StatusOr<Body> body = jinja::Parse(source);
  if (!body.ok()) return body.status();
  return Template(std::make_shared<const Body>(*std::move(body)));
}

absl::StatusOr<std::string> Template::Render(const Value& variables,
                                             const RenderLimits& limits) const {
  if (!variables.is_dict()) {
    return absl::InvalidArgumentError("template variables must be a dict");
  }
  return Renderer(variables, limits).Run(*body_);
}

}  // namespace semmoe::engine::jinja
