// Sparse constants (TFLite's sparsity parameters, what a DENSIFY op reads): the conceptual dense tensor rebuilt from
// the stored non-zero values. The format (schema.fbs): dense dims d0..dn-1, k of them split into blocks (block_map
// names the dense dim of each block dim dn+j, whose size is the block's), all n + k dims traversed in
// traversal_order; each traversal level is DENSE (every index 0 .. dense_size-1) or SPARSE_CSR (the indices of the
// previous level's entry p are array_indices[array_segments[p] .. array_segments[p + 1]]). The values are stored in
// traversal order, one per leaf. Every count, index and size is checked before it is used; a tensor the parameters
// do not describe exactly is refused naming the field.
#include "frontend/tflite/importer.hpp"

#include "support/error.hpp"

#include <fmt/format.h>

#include <cstring>
#include <functional>

namespace npuc::tflite_io {

namespace {

/// The largest dense tensor a sparse constant may stand for: its file holds only the non-zero values, so its dense
/// size is not bounded by the file's (a few bytes could ask for terabytes); 1 GiB of weights is far beyond any model.
constexpr uint64_t kMaxDenseBytes = uint64_t{1} << 30;

std::vector<int64_t> indexVector(fb::SparseIndexVector type, const void* table) {
  switch (type) {
    case fb::SparseIndexVector_Int32Vector:
      if (auto* v = static_cast<const fb::Int32Vector*>(table)->values()) return {v->begin(), v->end()};
      return {};
    case fb::SparseIndexVector_Uint16Vector:
      if (auto* v = static_cast<const fb::Uint16Vector*>(table)->values()) return {v->begin(), v->end()};
      return {};
    case fb::SparseIndexVector_Uint8Vector:
      if (auto* v = static_cast<const fb::Uint8Vector*>(table)->values()) return {v->begin(), v->end()};
      return {};
    default: fail(ErrorCode::kInvalidInput, "an index vector of unknown type {}", static_cast<int>(type));
  }
}

}  // namespace

Tensor Importer::sparseData(int32_t index) const {
  const fb::SparsityParameters& sp = *tensor(index).sparsity();
  const Shape dense = declaredShape(index);
  const DType dt = dtypeOf(index);
  const std::string what = tensorLabel(index) + ": sparsity";
  auto bad = [&](const std::string& why) { fail(ErrorCode::kInvalidInput, "{}: {}", what, why); };
  const size_t n = dense.size();
  if (product(dense) < 0 || static_cast<uint64_t>(product(dense)) * dtypeSize(dt) > kMaxDenseBytes)
    bad(fmt::format("the dense tensor {} would exceed {} bytes", shapeStr(dense), kMaxDenseBytes));
  const size_t k = sp.block_map() ? sp.block_map()->size() : 0;
  if (!sp.traversal_order() || sp.traversal_order()->size() != n + k)
    bad(fmt::format("traversal_order must list the {} dense and {} block dims", n, k));
  if (!sp.dim_metadata() || sp.dim_metadata()->size() != n + k) bad(fmt::format("dim_metadata must have {} entries", n + k));
  std::vector<int64_t> order(sp.traversal_order()->begin(), sp.traversal_order()->end());
  std::vector<int64_t> level_of(n + k, -1), block(n, 1), block_dim(n, -1);
  for (size_t l = 0; l < n + k; ++l) {
    const int64_t d = order[l];
    if (d < 0 || d >= static_cast<int64_t>(n + k) || level_of[static_cast<size_t>(d)] >= 0 || (l < n) != (d < static_cast<int64_t>(n)))
      bad(fmt::format("traversal_order [{}] is not the dense dims then the block dims, each once", fmt::join(order, ", ")));
    level_of[static_cast<size_t>(d)] = static_cast<int64_t>(l);
  }
  // The size of each traversal level: a block dim's is its block's; a blocked dense dim's is its count of blocks.
  std::vector<int64_t> level_size(n + k);
  for (size_t j = 0; j < k; ++j) {
    const int64_t m = sp.block_map()->Get(static_cast<uint32_t>(j));
    if (m < 0 || m >= static_cast<int64_t>(n) || block_dim[static_cast<size_t>(m)] >= 0)
      bad(fmt::format("block_map entry {} is {}: each block dim maps to a different dense dim", j, m));
    const auto* md = sp.dim_metadata()->Get(static_cast<uint32_t>(level_of[n + j]));
    if (md->format() != fb::DimensionType_DENSE || md->dense_size() <= 0 || dense[static_cast<size_t>(m)] % md->dense_size() != 0)
      bad(fmt::format("block dim {} must be DENSE with a size dividing dim {} ({})", n + j, m, dense[static_cast<size_t>(m)]));
    block[static_cast<size_t>(m)] = md->dense_size();
    block_dim[static_cast<size_t>(m)] = static_cast<int64_t>(n + j);
  }
  for (size_t l = 0; l < n + k; ++l) {
    const size_t d = static_cast<size_t>(order[l]);
    level_size[l] = d < n ? dense[d] / block[d] : block[static_cast<size_t>(sp.block_map()->Get(static_cast<uint32_t>(d - n)))];
  }
  // Each level's entries: DENSE multiplies the previous count; CSR reads its segments and indices.
  struct Level {
    bool csr = false;
    std::vector<int64_t> segments, indices;
  };
  std::vector<Level> levels(n + k);
  int64_t entries = 1;
  for (size_t l = 0; l < n + k; ++l) {
    const fb::DimensionMetadata* md = sp.dim_metadata()->Get(static_cast<uint32_t>(l));
    if (md->format() == fb::DimensionType_DENSE) {
      if (md->dense_size() != level_size[l])
        bad(fmt::format("dim_metadata {} is DENSE of size {}; that traversal dim has {}", l, md->dense_size(), level_size[l]));
      entries *= level_size[l];
    } else if (md->format() == fb::DimensionType_SPARSE_CSR) {
      Level& lv = levels[l];
      lv.csr = true;
      lv.segments = indexVector(md->array_segments_type(), md->array_segments());
      lv.indices = indexVector(md->array_indices_type(), md->array_indices());
      if (static_cast<int64_t>(lv.segments.size()) != entries + 1 || lv.segments.front() != 0)
        bad(fmt::format("dim_metadata {}: array_segments has {} values; the level before has {} entries (one more, from 0)",
                        l, lv.segments.size(), entries));
      for (size_t p = 1; p < lv.segments.size(); ++p)
        if (lv.segments[p] < lv.segments[p - 1] || lv.segments[p] - lv.segments[p - 1] > level_size[l])
          bad(fmt::format("dim_metadata {}: array_segments are not increasing by at most {}", l, level_size[l]));
      if (static_cast<int64_t>(lv.indices.size()) != lv.segments.back())
        bad(fmt::format("dim_metadata {}: array_indices has {} values; array_segments end at {}", l, lv.indices.size(),
                        lv.segments.back()));
      for (int64_t i : lv.indices)
        if (i < 0 || i >= level_size[l]) bad(fmt::format("dim_metadata {}: index {} is outside 0..{}", l, i, level_size[l] - 1));
      for (size_t p = 0; p + 1 < lv.segments.size(); ++p)
        for (int64_t q = lv.segments[p] + 1; q < lv.segments[p + 1]; ++q)
          if (lv.indices[static_cast<size_t>(q)] <= lv.indices[static_cast<size_t>(q) - 1])
            bad(fmt::format("dim_metadata {}: the indices of entry {} are not increasing", l, p));
      entries = lv.segments.back();
    } else {
      bad(fmt::format("dim_metadata {}: format {} is neither DENSE nor SPARSE_CSR", l, static_cast<int>(md->format())));
    }
    if (entries > product(dense)) bad("it describes more values than the dense tensor holds");
  }
  const auto* data = model_.buffers()->Get(tensor(index).buffer())->data();
  const size_t es = dtypeSize(dt);
  if (data->size() != static_cast<uint64_t>(entries) * es)
    bad(fmt::format("buffer {} holds {} bytes; the parameters describe {} values of {} bytes", tensor(index).buffer(),
                    data->size(), entries, es));
  Tensor out(dt, dense);
  std::memset(out.raw(), 0, out.nbytes());
  std::vector<int64_t> stride(n, 1), idx(n + k, 0);
  for (size_t i = n; i-- > 1;) stride[i - 1] = stride[i] * dense[i];
  int64_t leaf = 0;
  std::function<void(size_t, int64_t)> walk = [&](size_t l, int64_t parent) {
    if (l == n + k) {
      int64_t off = 0;
      for (size_t d = 0; d < n; ++d) {
        const int64_t inner = block_dim[d] >= 0 ? idx[static_cast<size_t>(level_of[static_cast<size_t>(block_dim[d])])] : 0;
        off += (idx[static_cast<size_t>(level_of[d])] * block[d] + inner) * stride[d];
      }
      std::memcpy(static_cast<uint8_t*>(out.raw()) + static_cast<size_t>(off) * es, data->data() + static_cast<size_t>(leaf++) * es, es);
      return;
    }
    if (!levels[l].csr) {
      for (int64_t i = 0; i < level_size[l]; ++i) {
        idx[l] = i;
        walk(l + 1, parent * level_size[l] + i);
      }
      return;
    }
    const Level& lv = levels[l];
    for (int64_t p = lv.segments[static_cast<size_t>(parent)]; p < lv.segments[static_cast<size_t>(parent) + 1]; ++p) {
      idx[l] = lv.indices[static_cast<size_t>(p)];
      walk(l + 1, p);
    }
  };
  walk(0, 0);
  return out;
}

}  // namespace npuc::tflite_io
