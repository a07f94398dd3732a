// Parser (recursive descent) and evaluator of constraint expressions.
#include "target/expr.hpp"

#include "support/error.hpp"

#include <cctype>
#include <set>

namespace npuc::target {

int64_t Value::asInt() const {
  if (!isInt()) fail(ErrorCode::kInvalidInput, "expected a number, got {}", str());
  return std::get<int64_t>(v);
}

bool Value::truthy() const {
  if (isInt()) return std::get<int64_t>(v) != 0;
  if (isString()) return !std::get<std::string>(v).empty();
  return !std::get<std::vector<Value>>(v).empty();
}

std::string Value::str() const {
  if (isInt()) return std::to_string(std::get<int64_t>(v));
  if (isString()) return std::get<std::string>(v);
  std::string r = "[";
  const auto& l = std::get<std::vector<Value>>(v);
  for (size_t i = 0; i < l.size(); ++i) r += (i ? ", " : "") + l[i].str();
  return r + "]";
}

bool Value::operator==(const Value& o) const { return v == o.v; }

struct Expr::Node {
  enum class Kind { kLit, kName, kList, kUnary, kBinary } kind;
  std::string op;  // operator or name
  Value lit;
  std::vector<std::shared_ptr<const Node>> kids;
};

namespace {

using NodeP = std::shared_ptr<const Expr::Node>;

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  NodeP parseAll() {
    // Both limits keep every recursion (parsing, evaluation, destruction of the tree) shallow: nesting is bounded
    // by kMaxExprDepth, and a chain of operators by the length.
    if (s_.size() > kMaxExprLength)
      fail(ErrorCode::kInvalidInput, "expression of {} characters: at most {} (split the rule)", s_.size(), kMaxExprLength);
    NodeP n = parseOr();
    skip();
    if (pos_ != s_.size()) error("unexpected '" + s_.substr(pos_, 1) + "'");
    return n;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    std::string shown = s_.size() > 200 ? s_.substr(0, 200) + "…" : s_;
    fail(ErrorCode::kInvalidInput, "expression \"{}\": {} at column {}", shown, what, pos_ + 1);
  }
  /// Counts one level of nesting ('not', unary '-', parentheses, lists) for its scope.
  struct Nest {
    Parser& p;
    explicit Nest(Parser& q) : p(q) {
      if (++p.depth_ > kMaxExprDepth) p.error(fmt::format("nesting deeper than {} levels", kMaxExprDepth));
    }
    ~Nest() { --p.depth_; }
  };
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool word(const char* w) {
    skip();
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    if (pos_ + n < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_ + n])) || s_[pos_ + n] == '_')) return false;
    pos_ += n;
    return true;
  }
  bool sym(const char* t) {
    skip();
    size_t n = std::char_traits<char>::length(t);
    if (s_.compare(pos_, n, t) != 0) return false;
    pos_ += n;
    return true;
  }
  static NodeP bin(const std::string& op, NodeP a, NodeP b) {
    auto n = std::make_shared<Expr::Node>();
    n->kind = Expr::Node::Kind::kBinary;
    n->op = op;
    n->kids = {std::move(a), std::move(b)};
    return n;
  }
  NodeP parseOr() {
    NodeP l = parseAnd();
    while (word("or")) l = bin("or", l, parseAnd());
    return l;
  }
  NodeP parseAnd() {
    NodeP l = parseNot();
    while (word("and")) l = bin("and", l, parseNot());
    return l;
  }
  NodeP parseNot() {
    if (word("not")) {
      Nest nest(*this);
      auto n = std::make_shared<Expr::Node>();
      n->kind = Expr::Node::Kind::kUnary;
      n->op = "not";
      n->kids = {parseNot()};
      return n;
    }
    return parseCmp();
  }
  NodeP parseCmp() {
    NodeP l = parseAdd();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"})
      if (sym(op)) return bin(op, l, parseAdd());
    size_t save = pos_;
    if (word("not") && word("in")) return bin("not in", l, parseAdd());
    pos_ = save;
    if (word("in")) return bin("in", l, parseAdd());
    return l;
  }
  NodeP parseAdd() {
    NodeP l = parseMul();
    for (;;) {
      if (sym("+")) l = bin("+", l, parseMul());
      else if (sym("-")) l = bin("-", l, parseMul());
      else return l;
    }
  }
  NodeP parseMul() {
    NodeP l = parseUnary();
    for (;;) {
      if (sym("*")) l = bin("*", l, parseUnary());
      else if (sym("/")) l = bin("/", l, parseUnary());
      else if (sym("%")) l = bin("%", l, parseUnary());
      else return l;
    }
  }
  NodeP parseUnary() {
    if (sym("-")) {
      Nest nest(*this);
      auto n = std::make_shared<Expr::Node>();
      n->kind = Expr::Node::Kind::kUnary;
      n->op = "-";
      n->kids = {parseUnary()};
      return n;
    }
    return parsePrimary();
  }
  NodeP parsePrimary() {
    skip();
    if (pos_ >= s_.size()) error("unexpected end");
    auto n = std::make_shared<Expr::Node>();
    char c = s_[pos_];
    if (c == '(' || c == '[') {
      Nest nest(*this);
      return c == '(' ? parseParens() : parseList(n);
    }

    if (c == '\'' || c == '"') {
      size_t e = s_.find(c, pos_ + 1);
      if (e == std::string::npos) error("unterminated string");
      n->kind = Expr::Node::Kind::kLit;
      n->lit = Value(s_.substr(pos_ + 1, e - pos_ - 1));
      pos_ = e + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        int d = s_[pos_] - '0';
        if (v > (INT64_MAX - d) / 10) error("number too large");
        v = v * 10 + d;
        ++pos_;
      }
      n->kind = Expr::Node::Kind::kLit;
      n->lit = Value(v);
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t b = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.')) ++pos_;
      n->kind = Expr::Node::Kind::kName;
      n->op = s_.substr(b, pos_ - b);
      if (n->op == "true" || n->op == "false") {
        n->kind = Expr::Node::Kind::kLit;
        n->lit = Value(int64_t{n->op == "true"});
      }
      return n;
    }
    error(std::string("unexpected '") + c + "'");
  }

  NodeP parseParens() {
    ++pos_;
    NodeP in = parseOr();
    if (!sym(")")) error("missing ')'");
    return in;
  }
  NodeP parseList(std::shared_ptr<Expr::Node> n) {
    ++pos_;
    n->kind = Expr::Node::Kind::kList;
    if (!sym("]")) {
      do n->kids.push_back(parseOr());
      while (sym(","));
      if (!sym("]")) error("missing ']'");
    }
    return n;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

Value evalNode(const Expr::Node& n, const Facts& f, const std::string& text) {
  using K = Expr::Node::Kind;
  switch (n.kind) {
    case K::kLit: return n.lit;
    case K::kName: {
      auto it = f.find(n.op);
      if (it == f.end()) fail(ErrorCode::kInvalidInput, "expression \"{}\": unknown fact '{}'", text, n.op);
      return it->second;
    }
    case K::kList: {
      std::vector<Value> l;
      for (auto& k : n.kids) l.push_back(evalNode(*k, f, text));
      return Value(std::move(l));
    }
    case K::kUnary: {
      Value a = evalNode(*n.kids[0], f, text);
      if (n.op == "not") return Value(int64_t{!a.truthy()});
      int64_t r = 0;
      if (__builtin_sub_overflow(int64_t{0}, a.asInt(), &r)) fail(ErrorCode::kInvalidInput, "expression \"{}\": overflow", text);
      return Value(r);
    }
    case K::kBinary: {
      if (n.op == "and") return Value(int64_t{evalNode(*n.kids[0], f, text).truthy() && evalNode(*n.kids[1], f, text).truthy()});
      if (n.op == "or") return Value(int64_t{evalNode(*n.kids[0], f, text).truthy() || evalNode(*n.kids[1], f, text).truthy()});
      Value a = evalNode(*n.kids[0], f, text), b = evalNode(*n.kids[1], f, text);
      if (n.op == "==") return Value(int64_t{a == b});
      if (n.op == "!=") return Value(int64_t{!(a == b)});
      if (n.op == "in" || n.op == "not in") {
        if (!b.isList()) fail(ErrorCode::kInvalidInput, "expression \"{}\": right side of 'in' must be a list", text);
        bool found = false;
        for (auto& e : std::get<std::vector<Value>>(b.v)) found |= e == a;
        return Value(int64_t{n.op == "in" ? found : !found});
      }
      auto ints = [&] {
        if (!a.isInt() || !b.isInt())
          fail(ErrorCode::kInvalidInput, "expression \"{}\": '{}' needs numbers, got {} and {}", text, n.op, a.str(), b.str());
      };
      ints();
      int64_t x = a.asInt(), y = b.asInt();
      if (n.op == "<") return Value(int64_t{x < y});
      if (n.op == "<=") return Value(int64_t{x <= y});
      if (n.op == ">") return Value(int64_t{x > y});
      if (n.op == ">=") return Value(int64_t{x >= y});
      int64_t r = 0;
      bool over = false;
      if (n.op == "+") over = __builtin_add_overflow(x, y, &r);
      else if (n.op == "-") over = __builtin_sub_overflow(x, y, &r);
      else if (n.op == "*") over = __builtin_mul_overflow(x, y, &r);
      else if (y == -1 && x == INT64_MIN) over = true;
      if (over) fail(ErrorCode::kInvalidInput, "expression \"{}\": '{}' of {} and {} overflows 64 bits", text, n.op, x, y);
      if (n.op == "+" || n.op == "-" || n.op == "*") return Value(r);
      if (y == 0) fail(ErrorCode::kInvalidInput, "expression \"{}\": division by zero", text);
      if (n.op == "/") return Value(x / y);
      return Value(x % y);
    }
  }
  return Value();
}

void collect(const Expr::Node& n, std::set<std::string>& out) {
  if (n.kind == Expr::Node::Kind::kName) out.insert(n.op);
  for (auto& k : n.kids) collect(*k, out);
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  e.root_ = Parser(text).parseAll();
  return e;
}

Value Expr::eval(const Facts& facts) const {
  if (!root_) return Value(int64_t{1});
  return evalNode(*root_, facts, text_);
}

std::vector<std::string> Expr::names() const {
  std::set<std::string> s;
  if (root_) collect(*root_, s);
  return {s.begin(), s.end()};
}

std::string renderTemplate(const std::string& tmpl, const Facts& facts) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '{') {
      size_t e = tmpl.find('}', i);
      if (e != std::string::npos) {
        auto it = facts.find(tmpl.substr(i + 1, e - i - 1));
        if (it != facts.end()) {
          out += it->second.str();
          i = e;
          continue;
        }
      }
    }
    out += tmpl[i];
  }
  return out;
}

}  // namespace npuc::target
