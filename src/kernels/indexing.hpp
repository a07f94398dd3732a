// Indexing kernels: GatherElements, ScatterElements, GatherND, ScatterND and TopK. The specification shared by the
// reference engine (its kernels of these ops call them) and the runtime (the gather_elements, scatter_elements,
// gather_nd, scatter_nd and top_k layer kinds), so a package computes exactly what the engine computes.
//
// Indices are int64 (callers widen int32); a negative index counts from the end of its axis; one out of range fails
// (ErrorCode::kInvalidArgument, naming the index, its position and the axis) before anything is written. Gathers
// move elements of any size; scatters with a reduction compute in the element type (integers wrap; float16 in
// float32, rounded once per update); updates are applied in index order, so a repeated index takes the last
// update (none) or every update in turn.
#pragma once

#include "npuc/dtype.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace npuc::kernels {

enum class ScatterReduction : uint8_t { kNone, kAdd, kMul, kMax, kMin, kCount };
/// "none", "add", "mul", "max", "min" (ONNX's `reduction`); kCount for another name.
ScatterReduction scatterReductionFromName(const std::string& name);
const char* scatterReductionName(ScatterReduction r);

/// GatherElements: y has the indices' shape; y[i] = x[i with its `axis` coordinate replaced by idx[i]]. Each dim of
/// the indices but `axis` is at most x's (the caller checks; so does this kernel).
void gatherElements(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& idx_shape, int64_t axis,
                    size_t elem, const void* x, const int64_t* idx, void* y);
/// ScatterElements: y = x, then for each position i of the indices, y[i with `axis` replaced by idx[i]] becomes
/// updates[i] (none) or reduction(that element, updates[i]). updates has the indices' shape.
void scatterElements(ScatterReduction r, DType t, const std::vector<int64_t>& x_shape,
                     const std::vector<int64_t>& idx_shape, int64_t axis, const void* x, const int64_t* idx,
                     const void* updates, void* y);
/// GatherND with batch_dims b: the indices' last dim k indexes x's dims b .. b + k − 1; each index tuple copies the
/// slice of x's remaining dims. y holds (indices' numel / k) slices.
void gatherNd(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& idx_shape, int64_t batch_dims,
              size_t elem, const void* x, const int64_t* idx, void* y);
/// ScatterND: y = x, then each index tuple (the indices' last dim k, over x's first k dims) receives its slice of
/// updates (none) or is reduced with it.
void scatterNd(ScatterReduction r, DType t, const std::vector<int64_t>& x_shape, const std::vector<int64_t>& idx_shape,
               const void* x, const int64_t* idx, const void* updates, void* y);
/// TopK along the middle dim of x viewed as [outer, n, inner]: the k largest (or smallest) of each line, in order
/// (NaN ranks above every number; ties go to the lower index), their values (x's bytes) and their int64 indices.
void topK(DType t, bool largest, int64_t outer, int64_t n, int64_t inner, int64_t k, const void* x, void* values,
          int64_t* indices);

/// OneHot: y viewed as [outer, depth, inner] (the indices as [outer, inner]); y[o, d, i] = values[1] (on) when
/// indices[o, i] (of type it, as a double; negative counts from depth) is d, else values[0] (off). values are two
/// elements of `elem` bytes.
void oneHot(DType it, const void* indices, int64_t outer, int64_t depth, int64_t inner, size_t elem, const void* values,
            void* y);

/// x viewed as [outer, dim, inner] around `axis` (below the rank; a scalar is [1, 1, 1]): the view of the kernels that
/// work along one axis (Compress, Unique, CumSum, ArgMax, …), for their callers.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
};
inline AxisView around(const std::vector<int64_t>& x, size_t axis) {
  AxisView v;
  for (size_t i = 0; i < x.size(); ++i)
    if (i != axis) (i < axis ? v.outer : v.inner) *= x[i];
  if (!x.empty()) v.dim = x[axis];
  return v;
}

/// Compress: the slices of x viewed as [outer, dim, inner] whose condition (cond_len bytes, nonzero = true; those past
/// dim are not read) is true, in order: y [outer, kept, inner]. Without an axis ONNX flattens x: outer = inner = 1.
/// compressKept counts them (the caller compares the count with y's dim: a package's shapes are fixed).
int64_t compressKept(const uint8_t* cond, int64_t cond_len, int64_t dim);
void compress(size_t elem, int64_t outer, int64_t dim, int64_t inner, const uint8_t* cond, int64_t cond_len, const void* x,
              void* y);

/// NonZero: the indices of x's non-zero elements (float16 / bfloat16 compared as float32: -0 is zero, NaN is not; bool
/// as its bytes), in row-major order, written as [rank, n] with row d at y + d * n (n: the count, returned). At most
/// `capacity` elements are written: a count above it fails (kInvalidInput) before anything is written.
int64_t nonZero(DType t, const std::vector<int64_t>& shape, const void* x, int64_t* y, int64_t capacity);

/// Unique: the distinct slices of x viewed as [outer, n, inner] (slice k is x[:, k, :]; ONNX flattens x when there is
/// no axis: outer = inner = 1), compared element by element as numbers (NaN equal to NaN, above every number).
/// `first` holds each distinct slice's first index — in the slices' ascending lexicographic order (numpy's) when
/// sorted, else in order of first appearance —, `inverse` each slice's position in `first`, `counts` how often each
/// distinct slice occurs.
struct UniqueSlices {
  std::vector<int64_t> first, inverse, counts;
};
UniqueSlices unique(DType t, int64_t outer, int64_t n, int64_t inner, const void* x, bool sorted);

/// ReverseSequence: x viewed as [d0, d1, inner], time along d0 (time_first) or d1 and batch along the other; for each
/// batch b its first lens[b] time steps reversed, the rest copied (each lens[b] in [0, time steps]: the caller checks).
void reverseSequence(size_t elem, int64_t d0, int64_t d1, int64_t inner, bool time_first, const int64_t* lens,
                     const void* x, void* y);

}  // namespace npuc::kernels
