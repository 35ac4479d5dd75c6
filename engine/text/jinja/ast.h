// The parsed form of a chat template: expressions and statements (parser.h builds them,
// template.h evaluates them).
#ifndef SEMMOE_ENGINE_TEXT_JINJA_AST_H_
#define SEMMOE_ENGINE_TEXT_JINJA_AST_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/text/jinja/value.h"

namespace semmoe::engine::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // items
    kDict,     // keys[i]: items[i]
    kAttr,     // object.name
    kIndex,    // object[items[0]]
    kSlice,    // object[items[0]:items[1]:items[2]] (null: omitted)
    kCall,     // object(items..., kwargs...)
    kFilter,   // object | name(items..., kwargs...); object null inside `{% filter %}` (unused)
    kTest,     // object is [not] name(items...)
    kUnary,    // op object: "not", "-", "+"
    kBinary,   // object op items[0]
    kCond,     // items[0] if object else items[1] (items[1] null: undefined)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  Value value;
  std::string name;      // Name, attribute, callee, filter or test name, or the operator.
  bool negated = false;  // kTest: `is not`.
  ExprPtr object;
  std::vector<ExprPtr> items;
  std::vector<ExprPtr> keys;                            // kDict
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // kCall, kFilter
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind {
    kText,    // text
    kOutput,  // {{ expr }}
    kIf,      // branches: (conditions[i], bodies[i]); else_body
    kFor,     // for targets in expr [if condition]: body [else: else_body]
    kSet,     // set targets = expr, or set target.attr = expr (attr non-empty)
    kBreak,
    kContinue,
    kBlock,  // {% generation %} ... : the body as is
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  std::vector<std::string> targets;
  std::string attr;
  ExprPtr condition;  // kFor's filter.
};

}  // namespace semmoe::engine::jinja

#endif  // SEMMOE_ENGINE_TEXT_JINJA_AST_H_
