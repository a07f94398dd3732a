// Walking the index space of a strided N-d tensor in row-major order, for the reference kernels that broadcast
// or move data (ref/layers_ref.cpp: binary; ref/movement_ref.cpp: transpose, tile, where, pad, slice).
#pragma once

#include "kernels/layers.hpp"
#include "support/error.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace npuc::kernels::detail {

inline int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// Multi-index odometer over the leading `rank` dims of `dims`.
struct Odometer {
  std::array<int64_t, kMaxRank> idx{};
  /// Sets the index to the row-major position `pos` of dims[0..rank).
  void seek(const int64_t* dims, int rank, int64_t pos) {
    for (int d = rank - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = pos % dims[d];
      pos /= dims[d];
    }
  }
  /// Advances by one; adds strides[d] to `off` for the dims that move (each stride array per operand).
  template <size_t K>
  void next(const int64_t* dims, int rank, const std::array<const int64_t*, K>& strides, std::array<int64_t, K>& off) {
    for (int d = rank - 1; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      ++idx[u];
      for (size_t k = 0; k < K; ++k) off[k] += strides[k][d];
      if (idx[u] < dims[d]) return;
      for (size_t k = 0; k < K; ++k) off[k] -= strides[k][d] * dims[d];
      idx[u] = 0;
    }
  }
};

template <size_t K>
std::array<int64_t, K> offsetsOf(const Odometer& od, int rank, const std::array<const int64_t*, K>& strides) {
  std::array<int64_t, K> off{};
  for (int d = 0; d < rank; ++d)
    for (size_t k = 0; k < K; ++k) off[k] += od.idx[static_cast<size_t>(d)] * strides[k][d];
  return off;
}

inline void checkRank(size_t r, const char* what) {
  if (r > static_cast<size_t>(kMaxRank)) fail(ErrorCode::kInvalidArgument, "{}: rank {} exceeds {}", what, r, kMaxRank);
}

}  // namespace npuc::kernels::detail
