// STRIDED_SLICE with TensorFlow's masks: each entry of begin / end / strides covers one axis, the ellipsis entry as
// many as the entries after it leave, a new-axis entry none (it inserts a size-1 axis), a shrink entry one index
// (the axis is removed); axes after the last entry are taken whole. Becomes one ONNX Slice over the framework's
// element order, then a Reshape to the output's shape.
#include "frontend/tflite/importer.hpp"

#include "support/error.hpp"

#include <algorithm>

namespace npuc::tflite_io {

void Importer::stridedSlice() {
  expectInputs(3, 4);
  expectOutputs(1);
  const auto* o = options<fb::StridedSliceOptions>();
  if (o && o->offset()) fail(ErrorCode::kUnsupported, "offset (end as an offset from begin) is not imported");
  const int32_t bm = o ? o->begin_mask() : 0, em = o ? o->end_mask() : 0, elm = o ? o->ellipsis_mask() : 0,
                nm = o ? o->new_axis_mask() : 0, sm = o ? o->shrink_axis_mask() : 0;
  ir::ValueId x = get(input(0), false);
  const Shape xs = shapeOf(x);
  const int64_t rank = static_cast<int64_t>(xs.size());
  const std::vector<int64_t> begin = constInput(1, "begin"), end = constInput(2, "end");
  const std::vector<int64_t> strides = hasInput(3) ? constInput(3, "strides") : std::vector<int64_t>(begin.size(), 1);
  const int64_t n = static_cast<int64_t>(begin.size());
  if (static_cast<int64_t>(end.size()) != n || static_cast<int64_t>(strides.size()) != n || n > 32)
    fail(ErrorCode::kInvalidInput, "begin, end and strides hold {}, {} and {} values (one per entry, up to 32)", n,
         end.size(), strides.size());
  auto bit = [](int32_t mask, int64_t i) { return ((mask >> i) & 1) != 0; };
  std::vector<int64_t> starts, stops, steps, axes;
  Shape out;
  int64_t d = 0;
  bool ellipsis = false;
  auto whole = [&](int64_t dim) {
    out.push_back(xs[static_cast<size_t>(dim)]);
  };
  for (int64_t i = 0; i < n; ++i) {
    if (bit(elm, i) && !ellipsis) {
      ellipsis = true;
      int64_t after = 0;
      for (int64_t j = i + 1; j < n; ++j) after += bit(nm, j) ? 0 : 1;
      for (int64_t k = rank - d - after; k > 0 && d < rank; --k) whole(d++);
      continue;
    }
    if (bit(nm, i)) {
      out.push_back(1);
      continue;
    }
    if (d >= rank) fail(ErrorCode::kInvalidInput, "{} entries for an input of {} axes", n, rank);
    const int64_t dim = xs[static_cast<size_t>(d)], s = strides[static_cast<size_t>(i)];
    if (s == 0) fail(ErrorCode::kInvalidInput, "stride 0 (entry {})", i);
    int64_t start, stop, count;
    if (bit(sm, i)) {
      start = begin[static_cast<size_t>(i)] < 0 ? begin[static_cast<size_t>(i)] + dim : begin[static_cast<size_t>(i)];
      if (start < 0 || start >= dim) fail(ErrorCode::kInvalidInput, "entry {}: index {} is outside the axis of {}", i, begin[static_cast<size_t>(i)], dim);
      stop = start + 1, count = 1;
      starts.push_back(start), stops.push_back(stop), steps.push_back(1), axes.push_back(d++);
      continue;
    }
    auto clampIndex = [&](int64_t v) {
      if (v < 0) v += dim;
      return s > 0 ? std::clamp<int64_t>(v, 0, dim) : std::clamp<int64_t>(v, -1, dim - 1);
    };
    start = bit(bm, i) ? (s > 0 ? 0 : dim - 1) : clampIndex(begin[static_cast<size_t>(i)]);
    stop = bit(em, i) ? (s > 0 ? dim : -1) : clampIndex(end[static_cast<size_t>(i)]);
    count = s > 0 ? (stop > start ? (stop - start + s - 1) / s : 0) : (start > stop ? (start - stop - s - 1) / -s : 0);
    if (count == 0) fail(ErrorCode::kUnsupported, "entry {} selects nothing (an empty tensor)", i);
    // ONNX clamps a negative end by adding the size: -(dim + 1) stands for "before index 0".
    starts.push_back(start), stops.push_back(stop == -1 ? -(dim + 1) : stop), steps.push_back(s), axes.push_back(d++);
    out.push_back(count);
  }
  while (d < rank) whole(d++);
  const std::string p = fmt::format("op{}/", op_.index);
  ir::ValueId y = x;
  if (!axes.empty())
    y = apply("Slice", {x, ints(p + "starts", starts), ints(p + "ends", stops), ints(p + "axes", axes), ints(p + "steps", steps)});
  bindOutput(0, apply("Reshape", {y, ints(p + "shape", out)}, {}, "/shape"), false);
}

}  // namespace npuc::tflite_io
