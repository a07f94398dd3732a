// Einsum of two operands as one batched matrix product (the forms attention and bilinear layers use:
// "bhid,bhjd->bhij", "bij,bjk->bik", …): both the engine's kernel and the package lowering run this plan, so they
// compute the same sums in the same order.
#pragma once

#include "ir/graph.hpp"

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

}  // namespace npuc::ops
