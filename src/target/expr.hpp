// A small expression language for target constraints, evaluated over a node's facts.
//
//   require: "kernel_h == kernel_w and kernel_h in [1, 3, 5, 7, 9]"
//   when:    "group == 1 and dilation_h == 1"
//   require: "[kernel_h, stride_h, pad_kind] in [[3, 1, 'same'], [3, 2, 'none']]"
//
// Values are integers, strings and lists. Operators: or and not, == != < <= > >=, in, not in, + - * / %,
// unary -, parentheses, list literals. Comparison of lists is element-wise equality. Parsing happens once,
// when a target is loaded, so syntax errors are reported with the file and field.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace npuc::target {

struct Value {
  std::variant<int64_t, std::string, std::vector<Value>> v;
  Value() : v(int64_t{0}) {}
  Value(int64_t i) : v(i) {}
  Value(std::string s) : v(std::move(s)) {}
  Value(std::vector<Value> l) : v(std::move(l)) {}
  bool isInt() const { return v.index() == 0; }
  bool isString() const { return v.index() == 1; }
  bool isList() const { return v.index() == 2; }
  int64_t asInt() const;  // throws when not an int
  bool truthy() const;
  std::string str() const;  // 3, 'same', [3, 3]
  bool operator==(const Value& o) const;
};

using Facts = std::map<std::string, Value>;

/// Limits of an expression (a rule is a line or two; these keep parsing and evaluation from deep recursion).
inline constexpr size_t kMaxExprLength = 4096;
inline constexpr int kMaxExprDepth = 64;

class Expr {
 public:
  /// Parses `text`; throws npuc::Error (kInvalidInput) describing the position of a syntax error, or naming the
  /// limit (kMaxExprLength characters, kMaxExprDepth levels of nesting) it breaks.
  static Expr parse(const std::string& text);
  Expr() = default;
  bool empty() const { return !root_; }
  const std::string& text() const { return text_; }
  /// Evaluates over `facts`; throws npuc::Error (kInvalidInput) naming an unknown fact or a type error.
  Value eval(const Facts& facts) const;
  /// Fact names the expression reads.
  std::vector<std::string> names() const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::string text_;
};

/// Replaces every {name} in `tmpl` by the fact's value ({name} stays when the fact is unknown).
std::string renderTemplate(const std::string& tmpl, const Facts& facts);

}  // namespace npuc::target
