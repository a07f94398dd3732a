// The two-operand einsum plan (einsum.hpp).
#include "ops/einsum.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace npuc::ops {

bool einsumPlan(const std::string& equation, const Shape& a, const Shape& b, EinsumPlan* plan, std::string* why) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->"), comma = eq.find(',');
  if (eq.find("...") != std::string::npos) return *why = "an ellipsis ('...') is not supported", false;
  if (arrow == std::string::npos) return *why = "the equation needs an explicit output ('->')", false;
  if (comma == std::string::npos || comma > arrow || eq.find(',', comma + 1) != std::string::npos)
    return *why = "only einsums of two operands are supported", false;
  const std::string ta = eq.substr(0, comma), tb = eq.substr(comma + 1, arrow - comma - 1), ty = eq.substr(arrow + 2);
  for (const std::string* t : {&ta, &tb, &ty}) {
    for (size_t i = 0; i < t->size(); ++i) {
      const char ch = (*t)[i];
      if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))) return *why = fmt::format("'{}' is not a letter", ch), false;
      if (t->find(ch, i + 1) != std::string::npos)
        return *why = fmt::format("letter '{}' appears twice in '{}' (diagonals are not supported)", ch, *t), false;
    }
  }
  if (ta.size() != a.size() || tb.size() != b.size())
    return *why = fmt::format("'{}' and '{}' do not match operands of rank {} and {}", ta, tb, a.size(), b.size()), false;
  auto dimOf = [&](char ch) -> int64_t {
    if (size_t i = ta.find(ch); i != std::string::npos) return a[i];
    return b[tb.find(ch)];
  };
  for (size_t i = 0; i < ta.size(); ++i)
    if (size_t j = tb.find(ta[i]); j != std::string::npos && a[i] != b[j])
      return *why = fmt::format("letter '{}' is {} in the first operand and {} in the second", ta[i], a[i], b[j]), false;
  std::string batch, free_a, free_b, contracted;
  for (char ch : ty) {
    const bool in_a = ta.find(ch) != std::string::npos, in_b = tb.find(ch) != std::string::npos;
    if (!in_a && !in_b) return *why = fmt::format("output letter '{}' is in neither operand", ch), false;
    (in_a && in_b ? batch : in_a ? free_a : free_b) += ch;
  }
  // free_a and free_b in their operand's order; contracted letters in a's order.
  auto ordered = [](const std::string& term, const std::string& set) {
    std::string r;
    for (char ch : term)
      if (set.find(ch) != std::string::npos) r += ch;
    return r;
  };
  free_a = ordered(ta, free_a);
  free_b = ordered(tb, free_b);
  for (char ch : ta)
    if (ty.find(ch) == std::string::npos) {
      if (tb.find(ch) == std::string::npos)
        return *why = fmt::format("letter '{}' is summed within the first operand alone (not supported)", ch), false;
      contracted += ch;
    }
  for (char ch : tb)
    if (ty.find(ch) == std::string::npos && ta.find(ch) == std::string::npos)
      return *why = fmt::format("letter '{}' is summed within the second operand alone (not supported)", ch), false;
  EinsumPlan p;
  auto perm = [](const std::string& term, const std::string& order, std::vector<int64_t>& out) {
    for (char ch : order) out.push_back(static_cast<int64_t>(term.find(ch)));
  };
  const std::string order_a = batch + free_a + contracted, order_b = batch + contracted + free_b;
  const std::string order_p = batch + free_a + free_b;
  perm(ta, order_a, p.perm_a);
  perm(tb, order_b, p.perm_b);
  perm(order_p, ty, p.perm_y);
  for (char ch : order_a) p.a_t.push_back(dimOf(ch));
  for (char ch : order_b) p.b_t.push_back(dimOf(ch));
  for (char ch : order_p) p.prod.push_back(dimOf(ch));
  for (char ch : ty) p.y.push_back(dimOf(ch));
  for (char ch : batch) p.batch *= dimOf(ch);
  for (char ch : free_a) p.M *= dimOf(ch);
  for (char ch : contracted) p.K *= dimOf(ch);
  for (char ch : free_b) p.N *= dimOf(ch);
  *plan = std::move(p);
  return true;
}

}  // namespace npuc::ops
