// How the data-movement layer kinds run (runtime_impl.hpp): bits of any element type moved, no conversion, no
// activation; and resize, which interpolates float values.
#include "runtime/runtime_impl.hpp"

#include "kernels/typed.hpp"

#include "support/fp16.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace npuc {

namespace {

using Step = Runtime::Impl::Step;

void runCopy(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  std::memmove(s.out, s.in[0], d.out(0).bytes);
}

void runReshape(Runtime::Impl&, Step& s) { std::memmove(s.out, s.in[0], s.d->out(0).bytes); }

void runConcat(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const size_t es = package::elemSize(d.out(0).type);
  std::vector<const void*> ins(s.in.begin(), s.in.end());
  std::vector<std::vector<int64_t>> shapes(s.shapes.begin(), s.shapes.end() - 1);
  kernels::concat(static_cast<int>(s.p[0]), shapes, ins, es, s.out, im.pool.get());
}

void runTranspose(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const size_t es = package::elemSize(d.out(0).type);
  std::vector<int64_t> perm(s.p.begin(), s.p.end());
  kernels::transpose(s.shapes[0], perm, es, s.in[0], s.out, im.pool.get());
}

void runPad(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const size_t es = package::elemSize(d.out(0).type);
  size_t r = s.shapes[0].size();
  std::vector<int64_t> b = signedWords(s.p, 0, r), e = signedWords(s.p, r, r);
  float v = package::paramFloat(s.p[2 * r]);
  uint16_t h = floatToHalf(v);
  const uint8_t code = 0;  // (int8 / uint8 codes: the reader allows only 0)
  const void* value = es == 4 ? static_cast<const void*>(&v) : es == 2 ? static_cast<const void*>(&h) : static_cast<const void*>(&code);
  kernels::padConstant(s.shapes[0], b, e, value, es, s.in[0], s.out, im.pool.get());
}

/// A dynamic slice's geometry (its bounds input [4, rank]: starts, ends, steps of every dim, and the dims x must
/// have: -1 any) over x's dims now.
kernels::SliceGeometry sliceBounds(const Step& s) {
  const size_t r = s.shapes[0].size();
  const auto* b = reinterpret_cast<const int64_t*>(s.in[1]);
  for (size_t i = 0; i < r; ++i)
    if (b[3 * r + i] >= 0 && b[3 * r + i] != s.shapes[0][i])
      fail(ErrorCode::kInvalidInput, "slice layer (seq {}): x is [{}] at run time; its parts were translated for dim {} of {} "
           "(a Split of a tensor whose shape the data decide, along a dim the data changed)", s.d->seq,
           fmt::join(s.shapes[0], ", "), i, b[3 * r + i]);
  std::vector<int64_t> axes(r);
  for (size_t i = 0; i < r; ++i) axes[i] = static_cast<int64_t>(i);
  return kernels::resolveSlice(s.shapes[0], {b, b + r}, {b + r, b + 2 * r}, axes, {b + 2 * r, b + 3 * r});
}

void runSlice(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const size_t es = package::elemSize(d.out(0).type);
  size_t r = s.shapes[0].size();
  const Shape& y = s.shapes.back();
  if (d.n_in == 2) {  // a dynamic tensor's slice: starts, ends, steps of every dim, resolved against its dims now
    const kernels::SliceGeometry g = sliceBounds(s);
    if (g.count != y) fail(ErrorCode::kInvalidInput, "slice layer: the bounds give {} for {}", shapeStr(g.count), shapeStr(y));
    return kernels::slice(s.shapes[0], g.begin, g.step, y, es, s.in[0], s.out, im.pool.get());
  }
  if (d.n_in == 5) {  // starts, ends, axes, steps computed by the model
    const kernels::SliceGeometry g = kernels::resolveSlice(s.shapes[0], intValues(d.in(1), s.in[1]), intValues(d.in(2), s.in[2]),
                                                           intValues(d.in(3), s.in[3]), intValues(d.in(4), s.in[4]));
    if (g.count != y)
      fail(ErrorCode::kInvalidInput, "slice layer: starts / ends / axes / steps give {} at run time; this package was "
           "translated for {} (translate again for those values)", shapeStr(g.count), shapeStr(y));
    return kernels::slice(s.shapes[0], g.begin, g.step, y, es, s.in[0], s.out, im.pool.get());
  }
  kernels::slice(s.shapes[0], signedWords(s.p, 0, r), signedWords(s.p, r, r), y, es, s.in[0], s.out, im.pool.get());
}

void runResize(Runtime::Impl& im, Step& s) {
  kernels::ResizeSpec spec = package::resizeSpecFromParams(s.p, s.shapes[0].size());
  const Shape &x = s.shapes[0], &y = s.shapes.back();
  if (s.d->n_in == 2 && s.d->in(1).type != ElemType::kI64) {  // scales computed by the model
    const float* sc = im.inF(s, 1);
    for (size_t i = 0; i < y.size(); ++i) {
      const double v = sc[i];
      if (!(v > 0) || !std::isfinite(v) || static_cast<int64_t>(std::floor(static_cast<double>(x[i]) * v)) != y[i])
        fail(ErrorCode::kInvalidInput, "resize layer: scales[{}] is {} at run time, which does not give this package's "
             "dim {} from {} (translate again for those scales)", i, v, y[i], x[i]);
      spec.scale[i] = v;
    }
  } else if (s.d->n_in == 2) {  // sizes computed by the model: the output's dims the package was translated for
    for (size_t i = 0; i < y.size(); ++i) {
      int64_t v = 0;
      std::memcpy(&v, s.in[1] + i * sizeof v, sizeof v);
      if (v != y[i])
        fail(ErrorCode::kInvalidInput, "resize layer: sizes[{}] is {} at run time; this package was translated for {} "
             "(translate again for those sizes)", i, v, y[i]);
    }
  }
  if (s.d->in(0).type != ElemType::kF32 && s.d->in(0).type != ElemType::kF16) {  // a nearest resize of codes / integers (validated)
    kernels::resizeNearestElements(spec, s.shapes[0], s.shapes.back(), s.in[0], s.out, package::elemSize(s.d->in(0).type),
                                   im.pool.get());
    return;
  }
  kernels::resize(spec, s.shapes[0], s.shapes.back(), im.inF(s, 0), im.outF(s), im.pool.get());
  im.store(s);
}

void runGather(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const size_t es = package::elemSize(d.out(0).type);
  const Shape& x = s.shapes[0];
  const size_t axis = s.p[0];
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < x.size(); ++i)
    if (i != axis) (i < axis ? outer : inner) *= x[i];
  const std::vector<int64_t> idx = intValues(d.in(1), s.in[1]);
  kernels::gather(outer, x[axis], inner, idx, es, s.in[0], s.out, im.pool.get());
}

void runTile(Runtime::Impl& im, Step& s) {
  const package::Descriptor& d = *s.d;
  const size_t es = package::elemSize(d.out(0).type);
  if (d.n_in == 2)  // ConstantOfShape's shape, computed by the model: the one the package's y was fixed for
    if (const std::vector<int64_t> given = intValues(d.in(1), s.in[1]); given != s.shapes.back())
      fail(ErrorCode::kInvalidInput, "tile layer: the shape is {} at run time; this package was translated for {} (translate "
           "again for another shape)", shapeStr(given), shapeStr(s.shapes.back()));
  kernels::tile(s.shapes[0], s.shapes.back(), es, s.in[0], s.out, im.pool.get());
}

void runTrilu(Runtime::Impl& im, Step& s) {
  const Shape& x = s.shapes[0];  // validated: rank >= 2
  const int64_t rows = x[x.size() - 2], cols = x[x.size() - 1];
  const int64_t mats = rows * cols != 0 ? shapeNumel(x) / (rows * cols) : 0;
  int64_t k = static_cast<int32_t>(s.p[1]);
  if (s.d->n_in == 2) std::memcpy(&k, s.in[1], sizeof k);  // k computed by the model (validated: int64 [1])
  kernels::trilu(s.p[0] != 0, k, mats, rows, cols, package::elemSize(s.d->in(0).type), s.in[0], s.out);
}

void runRange(Runtime::Impl&, Step& s) {
  const ElemType t = s.d->out(0).type;
  const int64_t n = s.shapes.back()[0];
  const int64_t given = kernels::rangeCount(kernels::elementAsDouble(t, s.in[0]), kernels::elementAsDouble(t, s.in[1]),
                                            kernels::elementAsDouble(t, s.in[2]));
  if (given != n)
    fail(ErrorCode::kInvalidInput, "range layer: start, limit and delta give {} elements at run time; this package was "
         "translated for {} (translate again for those values)", given, n);
  kernels::range(t, n, s.in[0], s.in[2], s.out);
}

}  // namespace

const KindExec kind_exec::kRange = {nullptr, &runRange};
const KindExec kind_exec::kTrilu = {nullptr, &runTrilu};
const KindExec kind_exec::kCopy = {nullptr, &runCopy};
const KindExec kind_exec::kConcat = {nullptr, &runConcat, [](const Step& s, std::vector<Shape>& y) {
  // the inputs' dims, summed along the axis (the reader checked the other dims agree at capacity; the kernel checks
  // them as they are)
  const size_t axis = s.p[0];
  y[0] = s.shapes[0];
  for (int i = 1; i < s.d->n_in; ++i) y[0][axis] += s.shapes[static_cast<size_t>(i)][axis];
}};
const KindExec kind_exec::kTranspose = {nullptr, &runTranspose, [](const Step& s, std::vector<Shape>& y) {
  const Shape& x = s.shapes[0];
  y[0].clear();
  for (uint32_t a : s.p) y[0].push_back(x[a]);
}};
const KindExec kind_exec::kPad = {nullptr, &runPad};
const KindExec kind_exec::kSlice = {nullptr, &runSlice, [](const Step& s, std::vector<Shape>& y) {
  if (s.d->n_in != 2) fail(ErrorCode::kInvalidInput, "slice layer: a dynamic slice takes its bounds as input 1");
  y[0] = sliceBounds(s).count;
}};
const KindExec kind_exec::kReshape = {nullptr, &runReshape, [](const Step& s, std::vector<Shape>& y) {
  const std::vector<uint32_t> words(s.p.begin(), s.p.begin() + s.d->out(0).rank);
  if (!kernels::reshapeDims(s.shapes[0], words, y[0]))
    fail(ErrorCode::kInvalidInput, "reshape layer (seq {}): the words [{}] cannot view [{}]", s.d->seq, fmt::join(words, ", "),
         fmt::join(s.shapes[0], ", "));
}};
const KindExec kind_exec::kResize = {nullptr, &runResize};
const KindExec kind_exec::kGather = {nullptr, &runGather, [](const Step& s, std::vector<Shape>& y) {
  // x's dims with the axis replaced by the indices' dims
  const Shape &x = s.shapes[0], &idx = s.shapes[1];
  const size_t axis = s.p[0];
  y[0].assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis));
  y[0].insert(y[0].end(), idx.begin(), idx.end());
  y[0].insert(y[0].end(), x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end());
}};
const KindExec kind_exec::kTile = {nullptr, &runTile, [](const Step& s, std::vector<Shape>& y) {
  // ConstantOfShape: the shape the model computes (a dynamic tile reads its shape as input 1)
  if (s.d->n_in != 2) fail(ErrorCode::kInvalidInput, "tile layer: a dynamic tile takes its shape as input 1");
  y[0] = intValues(s.d->in(1), s.in[1]);
  if (y[0].size() != s.shapes[0].size()) fail(ErrorCode::kInvalidInput, "tile layer: shape [{}] for rank {}", fmt::join(y[0], ", "), s.shapes[0].size());
}};

}  // namespace npuc
