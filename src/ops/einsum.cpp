// The two-operand einsum plan (einsum.hpp).
#include "ops/einsum.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

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


namespace {
bool isLetter(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/// A term with at most one "...", every other character a letter: its letters before and after the ellipsis.
bool splitTerm(const std::string& t, std::string* head, std::string* tail, bool* ellipsis, std::string* why) {
  const size_t e = t.find("...");
  *ellipsis = e != std::string::npos;
  if (*ellipsis && t.find("...", e + 3) != std::string::npos) return *why = fmt::format("'{}' has two ellipses", t), false;
  *head = *ellipsis ? t.substr(0, e) : t;
  *tail = *ellipsis ? t.substr(e + 3) : "";
  for (const std::string* s : {head, tail})
    for (char ch : *s)
      if (!isLetter(ch)) return *why = fmt::format("'{}' in term '{}' is not a letter", ch, t), false;
  return true;
}
}  // namespace

bool einsumTerms(const std::string& equation, const std::vector<Shape>& operands, EinsumTerms* terms, std::string* why) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> raw;
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    raw.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (raw.size() != operands.size())
    return *why = fmt::format("equation '{}' has {} operand terms for {} inputs", eq, raw.size(), operands.size()), false;
  EinsumTerms r;
  std::vector<int64_t> covered(raw.size(), 0);
  int64_t widest = 0;
  std::vector<std::pair<std::string, std::string>> parts(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    bool ell = false;
    if (!splitTerm(raw[i], &parts[i].first, &parts[i].second, &ell, why)) return false;
    const int64_t letters = static_cast<int64_t>(parts[i].first.size() + parts[i].second.size());
    const int64_t rank = static_cast<int64_t>(operands[i].size());
    covered[i] = rank - letters;
    if (ell ? covered[i] < 0 : covered[i] != 0)
      return *why = fmt::format("term '{}' does not match input {} of rank {}", raw[i], i, rank), false;
    widest = std::max(widest, covered[i]);
  }
  // Ellipsis labels are '0' + k: '0' .. '?' for at most 16 dims, never a letter.
  if (widest > 16) return *why = fmt::format("an ellipsis of {} dims (at most 16)", widest), false;
  auto ellipsisLabels = [](int64_t from, int64_t to) {
    std::string s;
    for (int64_t k = from; k < to; ++k) s += static_cast<char>('0' + k);
    return s;
  };
  std::map<char, int> uses;
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string t = parts[i].first + ellipsisLabels(widest - covered[i], widest) + parts[i].second;
    for (size_t k = 0; k < t.size(); ++k) {
      const int64_t d = operands[i][k];
      auto [it, fresh] = r.dims.emplace(t[k], d);
      if (!fresh && it->second != d) {
        if (isLetter(t[k]) || (d != 1 && it->second != 1))
          return *why = fmt::format("label '{}' of '{}' is {} in input {} and {} before", isLetter(t[k]) ? std::string(1, t[k])
                                    : std::string("..."), eq, d, i, it->second), false;
        it->second = std::max(it->second, d);
      }
      if (isLetter(t[k])) ++uses[t[k]];
    }
    r.in.push_back(t);
  }
  if (arrow == std::string::npos) {
    r.out = ellipsisLabels(0, widest);
    for (auto [ch, n] : uses)  // std::map: alphabetical (upper case before lower, as numpy orders them)
      if (n == 1) r.out += ch;
  } else {
    std::string head, tail;
    bool ell = false;
    if (!splitTerm(eq.substr(arrow + 2), &head, &tail, &ell, why)) return false;
    r.out = head + (ell ? ellipsisLabels(0, widest) : "") + tail;
    for (size_t k = 0; k < r.out.size(); ++k) {
      if (!r.dims.count(r.out[k])) return *why = fmt::format("output letter '{}' is in no input", r.out[k]), false;
      if (r.out.find(r.out[k], k + 1) != std::string::npos)
        return *why = fmt::format("output letter '{}' appears twice", r.out[k]), false;
    }
  }
  *terms = std::move(r);
  return true;
}

}  // namespace npuc::ops
