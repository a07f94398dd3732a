// Einsum of two operands as one batched matrix product (the forms attention and bilinear layers use:
// "bhid,bhjd->bhij", "bij,bjk->bik", …): both the engine's kernel and the package lowering run this plan, so they
// compute the same sums in the same order.
#pragma once

#include "ir/graph.hpp"

#include <map>
#include <string>
#include <vector>

namespace npuc::ops {

/// Every output letter of a two-operand einsum is a batch letter (in both operands), or a free letter of one
/// operand; every letter missing from the output is summed over and must be in both operands (contracted).
/// The product: a transposed to [batch…, free_a…, contracted…] = [nb, M, K], b to [batch…, contracted…, free_b…] =
/// [nb, K, N], y = a·b as [batch…, free_a…, free_b…], then transposed to the output's letter order. The sum over the
/// contracted letters runs in a's order of them, row-major (the matmul numerics of kernels/gemm.hpp).
struct EinsumPlan {
  std::vector<int64_t> perm_a, perm_b, perm_y;  // transposes: a and b into the product's order, the product into y's
  Shape a_t, b_t, prod;                         // the transposed operands and the product, unflattened
  int64_t batch = 1, M = 1, K = 1, N = 1;
  Shape y;                                       // the output shape
};

/// The plan of `equation` (ONNX Einsum: letters, optional spaces, "," between the two operands, an explicit "->";
/// no ellipsis, no letter twice in one term) on operands of shapes a and b; false, with why, when the equation is
/// not of this form or the shapes do not fit it.
bool einsumPlan(const std::string& equation, const Shape& a, const Shape& b, EinsumPlan* plan, std::string* why);

/// Any ONNX einsum as the engine's general kernel reads it: one term per operand and one for the output, each a
/// string of labels, one per dim. Spaces are dropped; an ellipsis becomes one label per dim it covers (the characters
/// '0', '1', … — never letters — aligned to the right across operands, as numpy broadcasts them); an equation without
/// "->" gets numpy's implicit output (the ellipsis's labels, then every letter used once, in alphabetical order). A
/// label may repeat within an operand's term (a diagonal); `dims` gives each label's size (an ellipsis label of size 1
/// in one operand broadcasts to the others'). False, with why, when the equation or the ranks do not fit.
struct EinsumTerms {
  std::vector<std::string> in;
  std::string out;
  std::map<char, int64_t> dims;
};
bool einsumTerms(const std::string& equation, const std::vector<Shape>& operands, EinsumTerms* terms, std::string* why);

}  // namespace npuc::ops
