#include "engine/text/jinja/parser.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "engine/text/jinja/lexer.h"

namespace semmoe::engine::jinja {
namespace {

// Deeper nesting is refused: a hostile template must not overflow the stack.
constexpr int kMaxDepth = 128;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  absl::StatusOr<Body> Run() {
    Body body;
    std::string end;
    if (absl::Status s = ParseBody({}, &body, &end); !s.ok()) return s;
    return body;
  }

 private:
  const Token& Peek(size_t ahead = 0) const { return t_[std::min(pos_ + ahead, t_.size() - 1)]; }
  bool IsOp(const char* op, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kOp && Peek(ahead).text == op;
  }
  bool IsName(const char* name, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kName && Peek(ahead).text == name;
  }
  absl::Status Error(const std::string& what) const {
    const Token& t = Peek();
    std::string near;
    switch (t.kind) {
      case TokenKind::kEnd:
        near = "the end of the template";
        break;
      case TokenKind::kBlockClose:
        near = "'%}'";
        break;
      case TokenKind::kExprClose:
        near = "'}}'";
        break;
      case TokenKind::kText:
        near = "text";
        break;
      default:
        near = absl::StrCat("'", t.text, "'");
    }
    return absl::InvalidArgumentError(
        absl::StrCat("template line ", t.line, ": ", what, " (at ", near, ")"));
  }
  absl::Status Expect(TokenKind kind, const char* op, const std::string& what) {
    if (Peek().kind != kind || (op != nullptr && Peek().text != op)) {
      return Error(absl::StrCat("expected ", what));
    }
    ++pos_;
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ExpectName(const std::string& what) {
    if (Peek().kind != TokenKind::kName) return Error(absl::StrCat("expected ", what));
    return t_[pos_++].text;
  }

  // Statements until a `{% NAME %}` tag with NAME in `ends` (consumed up to the name; *end gets
  // it), or the end of the template when `ends` is empty.
  absl::Status ParseBody(std::initializer_list<const char*> ends, Body* body, std::string* end) {
    if (++depth_ > kMaxDepth) return Error("blocks nested too deeply");
    while (true) {
      const Token& t = Peek();
      if (t.kind == TokenKind::kEnd) {
        if (ends.size() == 0) break;
        return Error(absl::StrCat("missing {% ", *(ends.end() - 1), " %}"));
      }
      if (t.kind == TokenKind::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->line = t.line;
        s->text = t.text;
        body->push_back(std::move(s));
        ++pos_;
        continue;
      }
      if (t.kind == TokenKind::kExprOpen) {
        ++pos_;
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = t.line;
        absl::StatusOr<ExprPtr> e = ParseExpr();
        if (!e.ok()) return e.status();
        s->expr = *std::move(e);
        if (absl::Status st = Expect(TokenKind::kExprClose, nullptr, "'}}'"); !st.ok()) return st;
        body->push_back(std::move(s));
        continue;
      }
      if (t.kind != TokenKind::kBlockOpen) return Error("expected text or a tag");
      const Token& name = Peek(1);
      if (name.kind != TokenKind::kName) {
        ++pos_;
        return Error("expected a statement name after '{%'");
      }
      for (const char* e : ends) {
        if (name.text == e) {
          pos_ += 2;
          *end = name.text;
          --depth_;
          return absl::OkStatus();
        }
      }
      pos_ += 2;
      absl::StatusOr<std::unique_ptr<Stmt>> s = ParseStatement(name.text, name.line);
      if (!s.ok()) return s.status();
      body->push_back(*std::move(s));
    }
    --depth_;
    return absl::OkStatus();
  }

  absl::Status CloseBlock() { return Expect(TokenKind::kBlockClose, nullptr, "'%}'"); }

  absl::StatusOr<std::unique_ptr<Stmt>> ParseStatement(const std::string& name, int line) {
    auto s = std::make_unique<Stmt>();
    s->line = line;
    std::string end;
    if (name == "if") {
      s->kind = Stmt::Kind::kIf;
      while (true) {
        absl::StatusOr<ExprPtr> cond = ParseExpr();
        if (!cond.ok()) return cond.status();
        if (absl::Status st = CloseBlock(); !st.ok()) return st;
        s->conditions.push_back(*std::move(cond));
        s->bodies.emplace_back();
        if (absl::Status st = ParseBody({"elif", "else", "endif"}, &s->bodies.back(), &end);
            !st.ok()) {
          return st;
        }
        if (end != "elif") break;
      }
      if (end == "else") {
        if (absl::Status st = CloseBlock(); !st.ok()) return st;
        if (absl::Status st = ParseBody({"endif"}, &s->else_body, &end); !st.ok()) return st;
      }
    } else if (name == "for") {
      s->kind = Stmt::Kind::kFor;
      const bool paren = IsOp("(");
      if (paren) ++pos_;
      do {
        absl::StatusOr<std::string> target = ExpectName("a loop variable");
        if (!target.ok()) return target.status();
        s->targets.push_back(*target);
      } while (IsOp(",") && ++pos_);
      if (paren) {
        if (absl::Status st = Expect(TokenKind::kOp, ")", "')'"); !st.ok()) return st;
      }
      if (absl::Status st = Expect(TokenKind::kName, "in", "'in'"); !st.ok()) return st;
      absl::StatusOr<ExprPtr> iter = ParseOr();  // Not a conditional: `if` filters the loop.
      if (!iter.ok()) return iter.status();
      s->expr = *std::move(iter);
      if (IsName("if")) {
        ++pos_;
        absl::StatusOr<ExprPtr> cond = ParseOr();
        if (!cond.ok()) return cond.status();
        s->condition = *std::move(cond);
      }
      if (IsName("recursive")) return Error("recursive loops are not supported");
      if (absl::Status st = CloseBlock(); !st.ok()) return st;
      if (absl::Status st = ParseBody({"else", "endfor"}, &s->body, &end); !st.ok()) return st;
      if (end == "else") {
        if (absl::Status st = CloseBlock(); !st.ok()) return st;
        if (absl::Status st = ParseBody({"endfor"}, &s->else_body, &end); !st.ok()) return st;
      }
    } else if (name == "set") {
      s->kind = Stmt::Kind::kSet;
      do {
        absl::StatusOr<std::string> target = ExpectName("a name to set");
        if (!target.ok()) return target.status();
        s->targets.push_back(*target);
      } while (IsOp(",") && ++pos_);
      if (s->targets.size() == 1 && IsOp(".")) {
        ++pos_;
        absl::StatusOr<std::string> attr = ExpectName("an attribute name");
        if (!attr.ok()) return attr.status();
        s->attr = *attr;
      }
      if (!IsOp("=")) {
        if (Peek().kind == TokenKind::kBlockClose && s->targets.size() == 1 && s->attr.empty()) {
          ++pos_;  // {% set name %}...{% endset %}
          if (absl::Status st = ParseBody({"endset"}, &s->body, &end); !st.ok()) return st;
          return CloseBlock().ok() ? absl::StatusOr<std::unique_ptr<Stmt>>(std::move(s))
                                   : Error("expected '%}'");
        }
        return Error("expected '='");
      }
      ++pos_;
      absl::StatusOr<ExprPtr> value = ParseTupleOrExpr();
      if (!value.ok()) return value.status();
      s->expr = *std::move(value);
    } else if (name == "break" || name == "continue") {
      s->kind = name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
    } else if (name == "generation") {
      s->kind = Stmt::Kind::kBlock;
      if (absl::Status st = CloseBlock(); !st.ok()) return st;
      if (absl::Status st = ParseBody({"endgeneration"}, &s->body, &end); !st.ok()) return st;
    } else {
      --pos_;
      return Error(absl::StrCat("unsupported statement '", name, "'"));
    }
    if (absl::Status st = CloseBlock(); !st.ok()) return st;
    return s;
  }

  ExprPtr Make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // `a, b` (a tuple, as a list) or one expression.
  absl::StatusOr<ExprPtr> ParseTupleOrExpr() {
    const int line = Peek().line;
    absl::StatusOr<ExprPtr> first = ParseExpr();
    if (!first.ok() || !IsOp(",")) return first;
    ExprPtr list = Make(Expr::Kind::kList, line);
    list->items.push_back(*std::move(first));
    while (IsOp(",")) {
      ++pos_;
      absl::StatusOr<ExprPtr> next = ParseExpr();
      if (!next.ok()) return next.status();
      list->items.push_back(*std::move(next));
    }
    return list;
  }

  absl::StatusOr<ExprPtr> ParseExpr() {
    if (++depth_ > kMaxDepth) return Error("expression nested too deeply");
    absl::StatusOr<ExprPtr> then = ParseOr();
    if (!then.ok()) return then;
    if (IsName("if")) {
      const int line = Peek().line;
      ++pos_;
      absl::StatusOr<ExprPtr> cond = ParseOr();
      if (!cond.ok()) return cond;
      ExprPtr e = Make(Expr::Kind::kCond, line);
      e->object = *std::move(cond);
      e->items.push_back(*std::move(then));
      if (IsName("else")) {
        ++pos_;
        absl::StatusOr<ExprPtr> otherwise = ParseExpr();
        if (!otherwise.ok()) return otherwise;
        e->items.push_back(*std::move(otherwise));
      } else {
        e->items.push_back(nullptr);
      }
      then = std::move(e);
    }
    --depth_;
    return then;
  }

  absl::StatusOr<ExprPtr> Binary(ExprPtr left, const std::string& op, ExprPtr right) {
    ExprPtr e = Make(Expr::Kind::kBinary, left->line);
    e->name = op;
    e->object = std::move(left);
    e->items.push_back(std::move(right));
    return e;
  }

  absl::StatusOr<ExprPtr> ParseOr() {
    absl::StatusOr<ExprPtr> left = ParseAnd();
    while (left.ok() && IsName("or")) {
      ++pos_;
      absl::StatusOr<ExprPtr> right = ParseAnd();
      if (!right.ok()) return right;
      left = Binary(*std::move(left), "or", *std::move(right));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseAnd() {
    absl::StatusOr<ExprPtr> left = ParseNot();
    while (left.ok() && IsName("and")) {
      ++pos_;
      absl::StatusOr<ExprPtr> right = ParseNot();
      if (!right.ok()) return right;
      left = Binary(*std::move(left), "and", *std::move(right));
    }
    return left;
  }

  absl::StatusOr<ExprPtr> ParseNot() {
    if (IsName("not")) {
      const int line = Peek().line;
      ++pos_;
      if (++depth_ > kMaxDepth) return Error("expression nested too deeply");
      absl::StatusOr<ExprPtr> operand = ParseNot();
      --depth_;
      if (!operand.ok()) return operand;
      ExprPtr e = Make(Expr::Kind::kUnary, line);
      e->name = "not";
      e->object = *std::move(operand);
      return e;
    }
    return ParseCompare();
  }

  absl::StatusOr<ExprPtr> ParseCompare() {
    absl::StatusOr<ExprPtr> left = ParseMath1();
    while (left.ok()) {
      std::string op;
      if (Peek().kind == TokenKind::kOp &&
          (Peek().text == "==" || Peek().text == "!=" || Peek().text == "<" || Peek().text == ">" ||
           Peek().text == "<=" || Peek().text == ">=")) {
        op = Peek().text;
        ++pos_;
      } else if (IsName("in")) {
        op = "in";
        ++pos_;
      } else if (IsName("not") && IsName("in", 1)) {
        op = "not in";
        pos_ += 2;
      } else {
        break;
      }
      absl::StatusOr<ExprPtr> right = ParseMath1();
      if (!right.ok()) return right;
      left = Binary(*std::move(left), op, *std::move(right));
    }
    return left;
  }

  // One precedence level of left-associative operators.
  template <typename Next>
  absl::StatusOr<ExprPtr> Level(std::initializer_list<const char*> ops, Next next) {
    absl::StatusOr<ExprPtr> left = (this->*next)();
    while (left.ok()) {
      const char* found = nullptr;
      for (const char* op : ops) {
        if (IsOp(op)) found = op;
      }
      if (found == nullptr) break;
      ++pos_;
      absl::StatusOr<ExprPtr> right = (this->*next)();
      if (!right.ok()) return right;
      left = Binary(*std::move(left), found, *std::move(right));
    }
    return left;
  }
  absl::StatusOr<ExprPtr> ParseMath1() { return Level({"+", "-"}, &Parser::ParseConcat); }
  absl::StatusOr<ExprPtr> ParseConcat() { return Level({"~"}, &Parser::ParseMath2); }
  absl::StatusOr<ExprPtr> ParseMath2() { return Level({"*", "/", "//", "%"}, &Parser::ParsePow); }
  absl::StatusOr<ExprPtr> ParsePow() { return Level({"**"}, &Parser::ParseUnary); }

  absl::StatusOr<ExprPtr> ParseUnary() {
    if (IsOp("-") || IsOp("+")) {
      const Token& t = Peek();
      ++pos_;
      if (++depth_ > kMaxDepth) return Error("expression nested too deeply");
      absl::StatusOr<ExprPtr> operand = ParseUnary();
      --depth_;
      if (!operand.ok()) return operand;
      ExprPtr e = Make(Expr::Kind::kUnary, t.line);
      e->name = t.text;
      e->object = *std::move(operand);
      return e;
    }
    absl::StatusOr<ExprPtr> e = ParsePrimary();
    if (!e.ok()) return e;
    e = ParsePostfix(*std::move(e));
    if (!e.ok()) return e;
    return ParseFiltersAndTests(*std::move(e));
  }

  // (args..., name=value...) after the '(' .
  absl::Status ParseArgs(Expr* call) {
    while (!IsOp(")")) {
      if (Peek().kind == TokenKind::kName && IsOp("=", 1)) {
        std::string key = t_[pos_].text;
        pos_ += 2;
        absl::StatusOr<ExprPtr> v = ParseExpr();
        if (!v.ok()) return v.status();
        call->kwargs.emplace_back(std::move(key), *std::move(v));
      } else {
        if (!call->kwargs.empty()) return Error("a positional argument after a keyword one");
        absl::StatusOr<ExprPtr> v = ParseExpr();
        if (!v.ok()) return v.status();
        call->items.push_back(*std::move(v));
      }
      if (IsOp(",")) {
        ++pos_;
      } else if (!IsOp(")")) {
        return Error("expected ',' or ')'");
      }
    }
    ++pos_;
    return absl::OkStatus();
  }

  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr e) {
    while (true) {
      const int line = Peek().line;
      if (IsOp(".")) {
        ++pos_;
        ExprPtr attr = Make(Expr::Kind::kAttr, line);
        if (Peek().kind == TokenKind::kInt) {  // foo.0 is foo[0]
          attr->kind = Expr::Kind::kIndex;
          ExprPtr index = Make(Expr::Kind::kLiteral, line);
          index->value = Value::Int(t_[pos_++].int_value);
          attr->items.push_back(std::move(index));
        } else {
          absl::StatusOr<std::string> name = ExpectName("an attribute name after '.'");
          if (!name.ok()) return name.status();
          attr->name = *name;
        }
        attr->object = std::move(e);
        e = std::move(attr);
      } else if (IsOp("[")) {
        ++pos_;
        ExprPtr sub = Make(Expr::Kind::kIndex, line);
        ExprPtr parts[3];
        int colons = 0;
        for (int part = 0; part < 3; ++part) {
          if (!IsOp(":") && !IsOp("]")) {
            absl::StatusOr<ExprPtr> v = ParseExpr();
            if (!v.ok()) return v;
            parts[part] = *std::move(v);
          }
          if (!IsOp(":") || colons == 2) break;
          ++pos_;
          ++colons;
        }
        if (absl::Status st = Expect(TokenKind::kOp, "]", "']'"); !st.ok()) return st;
        if (colons == 0) {
          if (parts[0] == nullptr) return Error("an empty subscript");
          sub->items.push_back(std::move(parts[0]));
        } else {
          sub->kind = Expr::Kind::kSlice;
          for (ExprPtr& p : parts) sub->items.push_back(std::move(p));
        }
        sub->object = std::move(e);
        e = std::move(sub);
      } else if (IsOp("(")) {
        ++pos_;
        ExprPtr call = Make(Expr::Kind::kCall, line);
        call->object = std::move(e);
        if (absl::Status st = ParseArgs(call.get()); !st.ok()) return st;
        e = std::move(call);
      } else {
        return e;
      }
    }
  }

  absl::StatusOr<ExprPtr> ParseFiltersAndTests(ExprPtr e) {
    while (true) {
      const int line = Peek().line;
      if (IsOp("|")) {
        ++pos_;
        ExprPtr f = Make(Expr::Kind::kFilter, line);
        absl::StatusOr<std::string> name = ExpectName("a filter name after '|'");
        if (!name.ok()) return name.status();
        f->name = *name;
        f->object = std::move(e);
        if (IsOp("(")) {
          ++pos_;
          if (absl::Status st = ParseArgs(f.get()); !st.ok()) return st;
        }
        absl::StatusOr<ExprPtr> post = ParsePostfix(std::move(f));
        if (!post.ok()) return post;
        e = *std::move(post);
      } else if (IsName("is")) {
        ++pos_;
        ExprPtr test = Make(Expr::Kind::kTest, line);
        if (IsName("not")) {
          test->negated = true;
          ++pos_;
        }
        // `none`, `true` and `false` are names here, not literals.
        absl::StatusOr<std::string> name = ExpectName("a test name after 'is'");
        if (!name.ok()) return name.status();
        test->name = *name;
        test->object = std::move(e);
        if (IsOp("(")) {
          ++pos_;
          if (absl::Status st = ParseArgs(test.get()); !st.ok()) return st;
        } else if (StartsOperand()) {  // `x is sameas false`, `n is divisibleby 3`
          absl::StatusOr<ExprPtr> arg = ParsePrimary();
          if (!arg.ok()) return arg;
          test->items.push_back(*std::move(arg));
        }
        e = std::move(test);
      } else {
        return e;
      }
    }
  }

  // Whether the next token can start a test's bare argument (a literal or a name that is not
  // an operator keyword).
  bool StartsOperand() const {
    const Token& t = Peek();
    if (t.kind == TokenKind::kString || t.kind == TokenKind::kInt || t.kind == TokenKind::kFloat) {
      return true;
    }
    if (t.kind != TokenKind::kName) return false;
    for (const char* kw : {"and", "or", "not", "in", "is", "if", "else", "recursive"}) {
      if (t.text == kw) return false;
    }
    return true;
  }

  absl::StatusOr<ExprPtr> ParsePrimary() {
    const Token& t = Peek();
    ExprPtr e = Make(Expr::Kind::kLiteral, t.line);
    switch (t.kind) {
      case TokenKind::kString: {
        std::string s;
        while (Peek().kind == TokenKind::kString) s += t_[pos_++].text;  // 'a' 'b' is 'ab'
        e->value = Value::String(std::move(s));
        return e;
      }
      case TokenKind::kInt:
        e->value = Value::Int(t.int_value);
        ++pos_;
        return e;
      case TokenKind::kFloat:
        e->value = Value::Float(t.float_value);
        ++pos_;
        return e;
      case TokenKind::kName:
        ++pos_;
        if (t.text == "true" || t.text == "True") {
          e->value = Value::Bool(true);
        } else if (t.text == "false" || t.text == "False") {
          e->value = Value::Bool(false);
        } else if (t.text == "none" || t.text == "None") {
          e->value = Value::None();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        return e;
      case TokenKind::kOp:
        break;
      default:
        return Error("expected an expression");
    }
    if (++depth_ > kMaxDepth) return Error("expression nested too deeply");
    if (t.text == "(") {
      ++pos_;
      absl::StatusOr<ExprPtr> inner = ParseTupleOrExpr();
      if (!inner.ok()) return inner;
      if (absl::Status st = Expect(TokenKind::kOp, ")", "')'"); !st.ok()) return st;
      --depth_;
      return inner;
    }
    if (t.text == "[" || t.text == "{") {
      const bool dict = t.text == "{";
      const char* close = dict ? "}" : "]";
      ++pos_;
      e->kind = dict ? Expr::Kind::kDict : Expr::Kind::kList;
      while (!IsOp(close)) {
        if (dict) {
          absl::StatusOr<ExprPtr> key = ParseExpr();
          if (!key.ok()) return key;
          e->keys.push_back(*std::move(key));
          if (absl::Status st = Expect(TokenKind::kOp, ":", "':'"); !st.ok()) return st;
        }
        absl::StatusOr<ExprPtr> item = ParseExpr();
        if (!item.ok()) return item;
        e->items.push_back(*std::move(item));
        if (IsOp(",")) {
          ++pos_;
        } else if (!IsOp(close)) {
          return Error(absl::StrCat("expected ',' or '", close, "'"));
        }
      }
      ++pos_;
      --depth_;
      return e;
    }
    return Error("expected an expression");
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

absl::StatusOr<Body> Parse(std::string_view source) {
  absl::StatusOr<std::vector<Token>> tokens = Lex(source);
  if (!tokens.ok()) return tokens.status();
  return Parser(*std::move(tokens)).Run();
}

}  // namespace semmoe::engine::jinja
