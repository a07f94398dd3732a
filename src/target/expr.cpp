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
    NodeP n = parseOr();
    skip();
    if (pos_ != s_.size()) error("unexpected '" + s_.substr(pos_, 1) + "'");
    return n;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    fail(ErrorCode::kInvalidInput, "expression \"{}\": {} at column {}", s_, what, pos_ + 1);
  }
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
    if (c == '(') {
      ++pos_;
      NodeP in = parseOr();
      if (!sym(")")) error("missing ')'");
      return in;
    }
    if (c == '[') {
      ++pos_;
      n->kind = Expr::Node::Kind::kList;
      if (!sym("]")) {
        do n->kids.push_back(parseOr());
        while (sym(","));
        if (!sym("]")) error("missing ']'");
      }
      return n;
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
        if (v > (INT64_MAX - 9) / 10) error("number too large");
        v = v * 10 + (s_[pos_++] - '0');
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

  const std::string& s_;
  size_t pos_ = 0;
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
      return Value(-a.asInt());
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
      if (n.op == "+") return Value(x + y);
      if (n.op == "-") return Value(x - y);
      if (n.op == "*") return Value(x * y);
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
