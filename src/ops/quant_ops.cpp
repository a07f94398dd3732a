// Schemas of ONNX's linear quantization ops: QuantizeLinear and DequantizeLinear (per tensor, or per axis with a
// 1-D scale), int8 / uint8 (and, for DequantizeLinear, int32) integer side. npuc's int8 numerics
// (docs/numerics.md) write quantized models in this form (--save-qdq-onnx) and read it back.
#include "kernels/quant.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <string>

namespace npuc::ops {

namespace {

/// The scale (input 1) and zero point (input 2) fit input 0: a scalar / 1-element scale, or a 1-D one of the
/// length of the axis; the zero point with the scale's shape.
void checkScale(InferContext& c) {
  const Shape& x = c.inputShape(0);
  const Shape& s = c.inputShape(1);
  if (c.inputDType(1) != DType::kF32 && c.inputDType(1) != DType::kF16)
    c.unsupported("a {} scale is not supported (float32, float16)", dtypeName(c.inputDType(1)));
  if (s.size() > 1) c.unsupported("blocked quantization (a scale of rank {}) is not supported", s.size());
  int64_t n = shapeNumel(s);
  if (s.size() == 1 && n != 1) {
    int64_t axis = c.node().attrInt("axis", 1);
    if (!normalizeAxis(axis, static_cast<int64_t>(x.size()))) c.error("axis {} is out of range for rank {}", c.node().attrInt("axis", 1), x.size());
    if (x[static_cast<size_t>(axis)] != n) c.error("a scale of {} values for axis {} of length {}", n, axis, x[static_cast<size_t>(axis)]);
  }
  if (c.hasInput(2) && c.inputShape(2) != s) c.error("the zero point has shape {}, the scale {}", shapeStr(c.inputShape(2)), shapeStr(s));
}

/// An integer layer's zero points and output clamp (attributes `zero_points`, then y_min / y_max): each in int8, the
/// clamp not empty.
void checkInt8Attrs(InferContext& c, std::initializer_list<const char*> zero_points) {
  auto inInt8 = [&](const char* a, int64_t fallback) {
    const int64_t v = c.node().attrInt(a, fallback);
    if (v < -128 || v > 127) c.error("{} = {} is outside int8", a, v);
    return v;
  };
  for (const char* z : zero_points) inInt8(z, 0);
  if (inInt8("y_min", -128) > inInt8("y_max", 127)) c.error("y_min above y_max");
}

/// A requantization factor's words (kernels::Multiplier): the multiplier 0 or in [2^30, 2^31), the shift in [-31, 30];
/// `which` names the factor in the message (" of channel 3", " (divisor 2)", or nothing).
void checkMultiplier(InferContext& c, int64_t m, int64_t sh, const std::string& which = "") {
  if (!(m == 0 || (m >= (int64_t{1} << 30) && m < (int64_t{1} << 31))) || sh < -31 || sh > 30)
    c.error("multiplier {} / shift {}{}: the multiplier must be 0 or in [2^30, 2^31), the shift in [-31, 30]", m, sh, which);
}

}  // namespace

void registerQuantOps(Registry& r) {
  r.add(makeSchema("QuantizeLinear", 2, 3, "y = saturate(round_half_even(x / scale) + zero_point), int8 / uint8",
                   [](InferContext& c) {
                     if (c.inputDType(0) != DType::kF32 && c.inputDType(0) != DType::kF16)
                       c.unsupported("quantization of {} is not supported (float32, float16)", dtypeName(c.inputDType(0)));
                     checkScale(c);
                     DType t = c.hasInput(2) ? c.inputDType(2) : DType::kU8;
                     if (t != DType::kI8 && t != DType::kU8) c.unsupported("quantization to {} is not supported (int8, uint8)", dtypeName(t));
                     c.setOutput(0, t, c.inputShape(0));
                   })
            .withDefault("axis", int64_t{1}));
  r.add(makeSchema("DequantizeLinear", 2, 3, "y = (x - zero_point) * scale, from int8 / uint8 / int32", [](InferContext& c) {
          DType t = c.inputDType(0);
          if (t != DType::kI8 && t != DType::kU8 && t != DType::kI32)
            c.unsupported("dequantization of {} is not supported (int8, uint8, int32)", dtypeName(t));
          checkScale(c);
          if (c.hasInput(2) && c.inputDType(2) != t) c.error("the zero point is {}, the input {}", dtypeName(c.inputDType(2)), dtypeName(t));
          c.setOutput(0, c.inputDType(1), c.inputShape(0));
        })
            .withDefault("axis", int64_t{1}));
  // ONNX's integer products and dynamic quantization (ONNX Runtime's dynamically quantized models): computed exactly
  // in the engine (int64 sums stored as int32, as ONNX specifies); they have no package form.
  r.add(makeSchema("DynamicQuantizeLinear", 1, 1,
                   "y = saturate(round_half_even(x / y_scale) + y_zero_point), uint8, with y_scale = (max(x, 0) - "
                   "min(x, 0)) / 255 and y_zero_point = saturate(round_half_even(-min(x, 0) / y_scale)) from x itself",
                   [](InferContext& c) {
                     if (c.inputDType(0) != DType::kF32) c.unsupported("x is {}; only float32 is supported", dtypeName(c.inputDType(0)));
                     c.setOutput(0, DType::kU8, c.inputShape(0));
                     c.setOutput(1, DType::kF32, Shape{});
                     c.setOutput(2, DType::kU8, Shape{});
                   },
                   3));
  auto int8or8 = [](InferContext& c, int i, const char* what) {
    if (c.inputDType(i) != DType::kI8 && c.inputDType(i) != DType::kU8)
      c.unsupported("{} is {}; int8 or uint8 is required", what, dtypeName(c.inputDType(i)));
  };
  {
    OpSchema s = makeSchema(
        "MatMulInteger", 2, 4,
        "numpy matmul of (a - a_zero_point) and (b - b_zero_point), int8 / uint8, summed exactly into int32; zero points "
        "per tensor, or per row of a ([M]) / per column of b ([N])",
        [int8or8](InferContext& c) {
          int8or8(c, 0, "a");
          int8or8(c, 1, "b");
          Shape a = c.inputShape(0), b = c.inputShape(1);
          if (a.size() < 2 || b.size() < 2) c.unsupported("a {} and b {} must be at least 2-D", shapeStr(a), shapeStr(b));
          if (a.back() != b[b.size() - 2]) c.error("inner dimensions differ: {} vs {}", shapeStr(a), shapeStr(b));
          for (int i : {2, 3}) {
            if (!c.hasInput(i)) continue;
            const char* name = i == 2 ? "a_zero_point" : "b_zero_point";
            if (c.inputDType(i) != c.inputDType(i - 2))
              c.error("{} is {}, {} {}", name, dtypeName(c.inputDType(i)), i == 2 ? "a" : "b", dtypeName(c.inputDType(i - 2)));
            if (c.inputShape(i).size() > 1) c.unsupported("{} of shape {}: one value or a vector is supported", name, shapeStr(c.inputShape(i)));
            const int64_t n = shapeNumel(c.inputShape(i)), want = i == 2 ? a[a.size() - 2] : b.back();
            if (n != 1 && n != want)
              c.error("{} has {} values: one, or one per {} ({})", name, n, i == 2 ? "row of a" : "column of b", want);
          }
          Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2), out;
          if (!broadcastShapes(ba, bb, out)) c.error("batch dims {} and {} do not broadcast", shapeStr(ba), shapeStr(bb));
          out.push_back(a[a.size() - 2]);
          out.push_back(b.back());
          c.setOutput(0, DType::kI32, out);
        });
    s.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out) {
      return shapeNumel(out[0].shape) * in[0].shape.back();
    };
    r.add(s);
  }
  {
    OpSchema s = makeSchema(
        "ConvInteger", 2, 4,
        "2-D convolution of (x - x_zero_point) and (w - w_zero_point), int8 / uint8, summed exactly into int32 (the "
        "padding contributes 0); w_zero_point per tensor or per output channel",
        [int8or8](InferContext& c) {
          int8or8(c, 0, "x");
          int8or8(c, 1, "w");
          const Shape& x = c.inputShape(0);
          const Shape& w = c.inputShape(1);
          if (x.size() != 4 || w.size() != 4) c.unsupported("only 2-D convolutions are supported (x {}, w {})", shapeStr(x), shapeStr(w));
          if (w[0] < 1) c.error("weights {} have no output channel", shapeStr(w));
          int64_t g = c.node().attrInt("group", 1);
          if (g <= 0 || x[1] % g || w[0] % g || w[1] * g != x[1])
            c.error("group {} does not fit input channels {} and weights {}", g, x[1], shapeStr(w));
          if (c.hasInput(2) && (c.inputDType(2) != c.inputDType(0) || shapeNumel(c.inputShape(2)) != 1))
            c.error("x_zero_point must be one {} value", dtypeName(c.inputDType(0)));
          if (c.hasInput(3) && (c.inputDType(3) != c.inputDType(1) || c.inputShape(3).size() > 1 ||
                                (shapeNumel(c.inputShape(3)) != 1 && shapeNumel(c.inputShape(3)) != w[0])))
            c.error("w_zero_point must be one {} value or one per output channel ({})", dtypeName(c.inputDType(1)), w[0]);
          Window win = resolveWindow(c.node(), {x[2], x[3]}, {w[2], w[3]}, false);
          c.setOutput(0, DType::kI32, Shape{x[0], w[0], win.out[0], win.out[1]});
        });
    s.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out) {
      return shapeNumel(out[0].shape) * (shapeNumel(in[1].shape) / in[1].shape[0]);
    };
    r.add(s);
  }
}

void registerQuantNpucOps(Registry& r) {
  // The int8-affine convolution (docs/numerics.md): what a DequantizeLinear -> Conv (+ fused Relu / Clip) ->
  // QuantizeLinear run of a QDQ model becomes on an integer device.
  OpSchema s = makeSchema("QConv", 2, 3,
                          "int8-affine convolution: x int8, w int8 [M, C/g, k…] (zero point 0), bias int32 [M]; "
                          "acc = bias + sum (x - x_zero_point) * w, y = clamp(y_zero_point + acc * M[m], y_min, y_max) "
                          "with M[m] = multipliers[m] * 2^(shifts[m] - 31) (docs/numerics.md)",
                          [](InferContext& c) {
                            if (c.inputDType(0) != DType::kI8 || c.inputDType(1) != DType::kI8)
                              c.error("x and w must be int8, got {} and {}", dtypeName(c.inputDType(0)), dtypeName(c.inputDType(1)));
                            if (c.hasInput(2) && c.inputDType(2) != DType::kI32) c.error("the bias must be int32, got {}", dtypeName(c.inputDType(2)));
                            const Shape& x = c.inputShape(0);
                            const Shape& w = c.inputShape(1);
                            if (x.size() < 3 || w.size() != x.size()) c.error("input {} and weights {} must be N-D of one rank", shapeStr(x), shapeStr(w));
                            int64_t g = c.node().attrInt("group", 1);
                            if (g <= 0 || x[1] % g || w[0] % g || w[1] * g != x[1])
                              c.error("group {} does not fit input channels {} and weights {}", g, x[1], shapeStr(w));
                            if (c.hasInput(2) && c.inputShape(2) != Shape{w[0]}) c.error("bias must be [{}], got {}", w[0], shapeStr(c.inputShape(2)));
                            auto m = c.node().attrInts("multipliers"), sh = c.node().attrInts("shifts");
                            if (m.empty() || m.size() != sh.size() || (m.size() != 1 && static_cast<int64_t>(m.size()) != w[0]))
                              c.error("multipliers / shifts: {} / {} values for {} output channels", m.size(), sh.size(), w[0]);
                            for (size_t i = 0; i < m.size(); ++i) checkMultiplier(c, m[i], sh[i], fmt::format(" of channel {}", i));
                            checkInt8Attrs(c, {"x_zero_point", "y_zero_point"});
                            std::vector<int64_t> sp(x.begin() + 2, x.end()), ks(w.begin() + 2, w.end());
                            Window win = resolveWindow(c.node(), sp, ks, false);
                            Shape out{x[0], w[0]};
                            out.insert(out.end(), win.out.begin(), win.out.end());
                            c.setOutput(0, DType::kI8, out);
                          });
  s.domain = "ai.npuc";
  s.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out) {
    return shapeNumel(out[0].shape) * (shapeNumel(in[1].shape) / in[1].shape[0]);
  };
  r.add(s);
  // The int8-affine addition (docs/numerics.md): what DequantizeLinear (a), DequantizeLinear (b) -> Add (+ Relu /
  // Clip) -> QuantizeLinear becomes on an integer device.
  OpSchema a = makeSchema("QAdd", 2, 2,
                          "int8-affine addition of two int8 tensors of one shape: acc = (a - a_zero_point) * multipliers[0] "
                          "+ (b - b_zero_point) * multipliers[1], y = clamp(y_zero_point + floor((acc + 2^(shift-1)) / "
                          "2^shift), y_min, y_max) (docs/numerics.md)",
                          [](InferContext& c) {
                            if (c.inputDType(0) != DType::kI8 || c.inputDType(1) != DType::kI8)
                              c.error("a and b must be int8, got {} and {}", dtypeName(c.inputDType(0)), dtypeName(c.inputDType(1)));
                            if (c.inputShape(0) != c.inputShape(1))
                              c.error("a {} and b {} must have one shape", shapeStr(c.inputShape(0)), shapeStr(c.inputShape(1)));
                            auto m = c.node().attrInts("multipliers");
                            if (m.size() != 2) c.error("multipliers: {} values (2: a, b)", m.size());
                            for (size_t i = 0; i < 2; ++i)
                              if (m[i] < 0 || m[i] >= 32768) c.error("multiplier {} = {} is outside [0, 2^15)", i, m[i]);
                            const int64_t sh = c.node().attrInt("shift", 0);
                            if (sh < 1 || sh > 30) c.error("shift {} is outside [1, 30]", sh);
                            checkInt8Attrs(c, {"a_zero_point", "b_zero_point", "y_zero_point"});
                            c.setOutput(0, DType::kI8, c.inputShape(0));
                          });
  a.domain = "ai.npuc";
  r.add(a);
  // The int8-affine product of two tensors: DequantizeLinear a, DequantizeLinear b -> Mul (+ Relu / Clip) ->
  // QuantizeLinear, b the same shape as a or one value per plane of a's trailing dimensions (an SE block's gate).
  OpSchema mul = makeSchema("QMul", 2, 2,
                            "int8-affine product of int8 a and b (b: a's shape, or a's leading dimensions then 1s): y = "
                            "clamp(y_zero_point + ((a - a_zero_point) * (b - b_zero_point)) * M, y_min, y_max) with M = "
                            "multiplier * 2^(shift - 31) (docs/numerics.md)",
                            [](InferContext& c) {
                              for (int i : {0, 1})
                                if (c.inputDType(i) != DType::kI8) c.error("input {} must be int8, got {}", i, dtypeName(c.inputDType(i)));
                              const Shape &a = c.inputShape(0), &b = c.inputShape(1);
                              if (!kernels::qmulShapes(a, b, a.size(), b.size())) c.error("b {} is neither a's shape {} nor its leading dimensions then 1s", shapeStr(b), shapeStr(a));
                              checkMultiplier(c, c.node().attrInt("multiplier", 0), c.node().attrInt("shift", 0));
                              checkInt8Attrs(c, {"a_zero_point", "b_zero_point", "y_zero_point"});
                              c.setOutput(0, DType::kI8, a);
                            });
  mul.domain = "ai.npuc";
  r.add(mul);
  // An element-wise function on int8-affine codes as a table (docs/numerics.md, "Look-up tables"): DequantizeLinear ->
  // a unary op (+ Relu / Clip) -> QuantizeLinear.
  OpSchema lut = makeSchema("QLookup", 1, 1,
                            "int8 x -> int8 y = table[x + 128]: the 256 results of an element-wise function of x's codes "
                            "(attribute 'table', computed as DequantizeLinear -> op -> QuantizeLinear computes them; "
                            "'fused': the ops)",
                            [](InferContext& c) {
                              if (c.inputDType(0) != DType::kI8) c.error("x must be int8, got {}", dtypeName(c.inputDType(0)));
                              const std::vector<int64_t> t = c.node().attrInts("table");
                              if (t.size() != 256) c.error("the table holds {} values (256)", t.size());
                              for (int64_t v : t)
                                if (v < -128 || v > 127) c.error("table value {} is outside int8", v);
                              c.setOutput(0, DType::kI8, c.inputShape(0));
                            });
  lut.domain = "ai.npuc";
  r.add(lut);
  // The int8-affine global average pooling (docs/numerics.md): DequantizeLinear -> GlobalAveragePool (+ Relu / Clip)
  // -> QuantizeLinear on an integer device.
  OpSchema gap = makeSchema("QGlobalAvgPool", 1, 1,
                            "int8-affine global average pooling of int8 x [N, C, …]: per plane of n values acc = sum x - n * "
                            "x_zero_point, y = clamp(y_zero_point + acc * M, y_min, y_max) with M = multiplier * 2^(shift - 31) "
                            "(docs/numerics.md)",
                            [](InferContext& c) {
                              if (c.inputDType(0) != DType::kI8) c.error("x must be int8, got {}", dtypeName(c.inputDType(0)));
                              const Shape& x = c.inputShape(0);
                              if (x.size() < 3) c.error("input {} must have spatial dimensions", shapeStr(x));
                              int64_t n = 1;
                              for (size_t i = 2; i < x.size(); ++i) n *= x[i];
                              if (n < 1 || n >= (int64_t{1} << 23)) c.error("{} values per plane (1 to 2^23 - 1)", n);
                              checkMultiplier(c, c.node().attrInt("multiplier", 0), c.node().attrInt("shift", 0));
                              checkInt8Attrs(c, {"x_zero_point", "y_zero_point"});
                              Shape y(x.size(), 1);
                              y[0] = x[0], y[1] = x[1];
                              c.setOutput(0, DType::kI8, y);
                            });
  gap.domain = "ai.npuc";
  r.add(gap);
  // The int8-affine windowed average pooling: DequantizeLinear -> AveragePool (+ Relu / Clip) -> QuantizeLinear. The
  // window attributes are AveragePool's; one multiplier / shift pair per possible divisor 1 .. kh * kw.
  OpSchema avg = makeSchema("QAvgPool", 1, 1,
                            "int8-affine average pooling of int8 x [N, C, …] over AveragePool's windows: per output acc = sum "
                            "of the taps inside x - taps * x_zero_point, y = clamp(y_zero_point + acc * M[n], y_min, y_max) with "
                            "n the divisor (count_include_pad as AveragePool) and M[n] = multipliers[n-1] * 2^(shifts[n-1] - 31) "
                            "(docs/numerics.md)",
                            [](InferContext& c) {
                              if (c.inputDType(0) != DType::kI8) c.error("x must be int8, got {}", dtypeName(c.inputDType(0)));
                              const Shape& x = c.inputShape(0);
                              if (x.size() != 3 && x.size() != 4) c.error("input {} must be 3-D or 4-D (N, C, spatial…)", shapeStr(x));
                              Window w = resolvePoolWindow(c.node(), x);
                              int64_t taps = 1;
                              for (int64_t k : w.kernel) taps *= k;
                              if (taps > 1024) c.error("a window of {} taps (the int8 form holds at most 1024)", taps);
                              const std::vector<int64_t> m = c.node().attrInts("multipliers"), sh = c.node().attrInts("shifts");
                              if (static_cast<int64_t>(m.size()) != taps || sh.size() != m.size())
                                c.error("{} multipliers and {} shifts for a window of {} taps (one of each per divisor)", m.size(), sh.size(), taps);
                              for (size_t i = 0; i < m.size(); ++i) checkMultiplier(c, m[i], sh[i], fmt::format(" (divisor {})", i + 1));
                              checkInt8Attrs(c, {"x_zero_point", "y_zero_point"});
                              Shape y{x[0], x[1]};
                              y.insert(y.end(), w.out.begin(), w.out.end());
                              c.setOutput(0, DType::kI8, y);
                            });
  avg.domain = "ai.npuc";
  r.add(avg);
  // The int8-affine product of two activations: DequantizeLinear (a), DequantizeLinear (b) -> MatMul (+ Relu / Clip)
  // -> QuantizeLinear, neither operand a constant (attention's Q·Kᵀ and P·V).
  OpSchema mm = makeSchema("QMatMul", 2, 2,
                           "int8-affine product of two int8 tensors a [..., M, K], b [..., K, N] (MatMul's batch broadcasting): "
                           "acc = sum_k (a - a_zero_point) * (b - b_zero_point), y = clamp(y_zero_point + acc * M, y_min, y_max) "
                           "with M = multiplier * 2^(shift - 31) (docs/numerics.md)",
                           [](InferContext& c) {
                             if (c.inputDType(0) != DType::kI8 || c.inputDType(1) != DType::kI8)
                               c.error("a and b must be int8, got {} and {}", dtypeName(c.inputDType(0)), dtypeName(c.inputDType(1)));
                             const Shape &a = c.inputShape(0), &b = c.inputShape(1);
                             if (a.size() < 2 || b.size() < 2) c.error("a {} and b {} must be matrices (rank >= 2)", shapeStr(a), shapeStr(b));
                             if (a.back() != b[b.size() - 2]) c.error("inner dimensions differ: {} vs {}", shapeStr(a), shapeStr(b));
                             if (a.back() < 1 || a.back() > 33025) c.error("depth {} outside [1, 33025] (int32 sums)", a.back());
                             Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2), out;
                             if (!broadcastShapes(ba, bb, out)) c.error("batch dims {} and {} do not broadcast", shapeStr(ba), shapeStr(bb));
                             out.push_back(a[a.size() - 2]);
                             out.push_back(b.back());
                             checkMultiplier(c, c.node().attrInt("multiplier", 0), c.node().attrInt("shift", 0));
                             checkInt8Attrs(c, {"a_zero_point", "b_zero_point", "y_zero_point"});
                             c.setOutput(0, DType::kI8, out);
                           });
  mm.domain = "ai.npuc";
  mm.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out) {
    return shapeNumel(out[0].shape) * in[0].shape.back();
  };
  r.add(mm);

  // int8-pow2 (TIDL, docs/numerics.md): the ops quant::quantizeToPow2 writes. Codes are int8 (signed) or uint8
  // (unsigned); attribute "table" holds the slots and the rest of kernels::pow2::Table (checked where it is
  // lowered and by the package reader). They run in packages only: the engine has no kernels for them.
  auto codes = [](InferContext& c, int i) {
    const DType t = c.inputDType(i);
    if (t != DType::kI8 && t != DType::kU8) c.error("input {} must be int8 / uint8 codes, got {}", i, dtypeName(t));
  };
  auto table = [](InferContext& c) {
    auto t = c.node().attrInts("table");
    if (t.size() < 11 || t[0] < 0 || t[0] > 8 || t.size() != 11 + static_cast<size_t>(t[0]))
      c.error("attribute table: {} words do not make an int8-pow2 table (11 + the input count)", t.size());
    return t;
  };
  auto weightCodes = [=](InferContext& c) {  // (P2Conv, P2ConvTranspose: codes x, int16 weights, int32 bias)
    codes(c, 0);
    if (c.inputDType(1) != DType::kI16 || c.inputDType(2) != DType::kI32)
      c.error("weights must be int16 and the bias int32, got {} and {}", dtypeName(c.inputDType(1)), dtypeName(c.inputDType(2)));
  };
  auto outType = [](const std::vector<int64_t>& t) { return t[2 + static_cast<size_t>(t[0])] ? DType::kI8 : DType::kU8; };
  auto pow2 = [&r](OpSchema s) {
    s.domain = "ai.npuc";
    r.add(s);
  };
  pow2(makeSchema("P2Quantize", 1, 1, "int8-pow2: float32 -> codes at this frame's 2^-q (the slot's range history)",
                  [=](InferContext& c) {
                    if (c.inputDType(0) != DType::kF32) c.error("input must be float32, got {}", dtypeName(c.inputDType(0)));
                    c.setOutput(0, outType(table(c)), c.inputShape(0));
                  }));
  pow2(makeSchema("P2Dequantize", 1, 1, "int8-pow2: codes -> float32, code * 2^-q", [=](InferContext& c) {
    codes(c, 0);
    table(c);
    c.setOutput(0, DType::kF32, c.inputShape(0));
  }));
  OpSchema pc = makeSchema("P2Conv", 3, 3,
                           "int8-pow2 convolution (x [N, C, H, W], or [N, C, W]: 1-D) or inner product (x [M, K], w [N, K]): codes x, int16 "
                           "weights at 2^-qw, int32 bias at 2^-qb; exact sums, requantized to this frame's q",
                           [=](InferContext& c) {
                             weightCodes(c);
                             auto t = table(c);
                             const Shape& x = c.inputShape(0);
                             const Shape& w = c.inputShape(1);
                             if (c.inputShape(2) != Shape{w.empty() ? 0 : w[0]}) c.error("bias must be [{}], got {}", w.empty() ? 0 : w[0], shapeStr(c.inputShape(2)));
                             if (x.size() == 2) {
                               if (w.size() != 2 || w[1] != x[1]) c.error("inner product of {} and weights {}", shapeStr(x), shapeStr(w));
                               c.setOutput(0, outType(t), Shape{x[0], w[0]});
                               return;
                             }
                             if ((x.size() != 4 && x.size() != 3) || w.size() != x.size())
                               c.error("input {} and weights {} must be 3-D or 4-D (a 1-D or 2-D convolution)", shapeStr(x), shapeStr(w));
                             int64_t g = c.node().attrInt("group", 1);
                             if (g <= 0 || x[1] % g || w[0] % g || w[1] * g != x[1])
                               c.error("group {} does not fit input channels {} and weights {}", g, x[1], shapeStr(w));
                             std::vector<int64_t> sp(x.begin() + 2, x.end()), ks(w.begin() + 2, w.end());
                             Window win = resolveWindow(c.node(), sp, ks, false);
                             Shape out{x[0], w[0]};
                             out.insert(out.end(), win.out.begin(), win.out.end());
                             c.setOutput(0, outType(t), out);
                           });
  pc.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out) {
    return shapeNumel(out[0].shape) * (shapeNumel(in[1].shape) / in[1].shape[0]);
  };
  pow2(pc);
  OpSchema pt = makeSchema("P2ConvTranspose", 3, 3,
                           "int8-pow2 transposed convolution (TIDL's Deconvolution; x [N, C, H, W], w [C, M/g, kh, kw]): "
                           "codes x, int16 weights at 2^-qw, int32 bias at 2^-qb; exact sums, requantized to this frame's q",
                           [=](InferContext& c) {
                             weightCodes(c);
                             const auto t = table(c);
                             const Shape &x = c.inputShape(0), &w = c.inputShape(1);
                             if (x.size() != 4 || w.size() != 4) c.error("input {} and weights {} must be 4-D", shapeStr(x), shapeStr(w));
                             const int64_t g = c.node().attrInt("group", 1);
                             if (g <= 0 || w[0] != x[1] || x[1] % g) c.error("weights {} do not match input channels {} with group {}", shapeStr(w), x[1], g);
                             if (c.inputShape(2) != Shape{w[1] * g}) c.error("bias must be [{}], got {}", w[1] * g, shapeStr(c.inputShape(2)));
                             Window win = resolveTransposedWindow(c.node(), {x[2], x[3]}, {w[2], w[3]});
                             c.setOutput(0, outType(t), Shape{x[0], w[1] * g, win.out[0], win.out[1]});
                           });
  pt.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>&) {
    return shapeNumel(in[0].shape) * (shapeNumel(in[1].shape) / in[1].shape[0]);
  };
  pow2(pt);
  for (auto [op, doc] : {std::pair{"P2Add", "int8-pow2 addition of two code tensors of one shape, aligned to the finer q, exact"},
                         std::pair{"P2Max", "int8-pow2 element-wise maximum of two code tensors of one shape, aligned to the finer q, exact"},
                         std::pair{"P2Mul", "int8-pow2 element-wise product of two code tensors of one shape, at the sum of their q's, exact"}})
    pow2(makeSchema(op, 2, 2, doc, [=](InferContext& c) {
      codes(c, 0);
      codes(c, 1);
      if (c.inputShape(0) != c.inputShape(1)) c.error("a {} and b {} must have one shape", shapeStr(c.inputShape(0)), shapeStr(c.inputShape(1)));
      c.setOutput(0, outType(table(c)), c.inputShape(0));
    }));
  pow2(makeSchema("P2PRelu", 2, 2,
                  "int8-pow2 PRelu: slopes as int16 codes at 2^-qw (one, or one per channel of dim 1), x * 2^qw for "
                  "x >= 0 and x * slope below, exact, requantized",
                  [=](InferContext& c) {
                    codes(c, 0);
                    const int64_t C = shapeNumel(c.inputShape(1)), X = c.inputShape(0).size() > 1 ? c.inputShape(0)[1] : 0;
                    if (c.inputDType(1) != DType::kI16 || (C != 1 && C != X))
                      c.error("the slopes must be int16, one or one per channel ({} of x's {})", C, X);
                    c.setOutput(0, outType(table(c)), c.inputShape(0));
                  }));
  // (6 inputs at most: a package layer references 8 tensors, the output and the table among them)
  pow2(makeSchema("P2Concat", 1, 6,
                  "int8-pow2 concatenation of code tensors along `axis`: each brought exactly to the finest q, then "
                  "requantized to this frame's q (one slot for the result)",
                  [=](InferContext& c) {
                    const auto t = table(c);
                    if (t[0] != c.numInputs()) c.error("the table has {} input slots for {} inputs", t[0], c.numInputs());
                    for (int i = 0; i < c.numInputs(); ++i) codes(c, i);
                    c.setOutput(0, outType(t), registry_detail::concatShape(c));
                  }));
  pow2(makeSchema("P2AvgPool", 1, 1,
                  "int8-pow2 2-D average pooling (AveragePool's attributes; one divisor for every window): the exact "
                  "window sums, divided in requantization",
                  [=](InferContext& c) {
                    codes(c, 0);
                    const auto t = table(c);
                    const Shape& x = c.inputShape(0);
                    if (x.size() != 4) c.error("input must be 4-D, got {}", shapeStr(x));
                    Window w = resolvePoolWindow(c.node(), x);
                    Shape out{x[0], x[1]};
                    out.insert(out.end(), w.out.begin(), w.out.end());
                    c.setOutput(0, outType(t), out);
                  }));
  pow2(makeSchema("P2Resize", 1, 4,
                  "int8-pow2 interpolating resize (linear or cubic): Resize's inputs and attributes (constant roi, "
                  "scales, sizes; `upsample` 1: Upsample's meaning) on codes, the taps' weights as integers at 2^-10, "
                  "exact sums requantized to this frame's q; `output_shape` is the output's shape",
                  [=](InferContext& c) {
                    codes(c, 0);
                    const auto t = table(c);
                    const std::vector<int64_t> y = c.node().attrInts("output_shape");
                    if (y.size() != c.inputShape(0).size()) c.error("output_shape {} must have x's rank", shapeStr(y));
                    c.setOutput(0, outType(t), y);
                  }));
  pow2(makeSchema("P2Softmax", 1, 1,
                  "int8-pow2 softmax over `axis` (one axis, ONNX 13's meaning): codes -> uint8 probabilities at the "
                  "fixed 2^-8, one byte per class (kernels::pow2::softmax)",
                  [=](InferContext& c) {
                    codes(c, 0);
                    const auto t = table(c);
                    const int64_t axis = c.node().attrInt("axis", -1), r = static_cast<int64_t>(c.inputShape(0).size());
                    if (axis < 0 || axis >= r) c.error("axis {} must lie in [0, {})", axis, r);
                    if (outType(t) != DType::kU8) c.error("the table must give unsigned codes");
                    c.setOutput(0, DType::kU8, c.inputShape(0));
                  }));
  pow2(makeSchema("P2GlobalAvgPool", 1, 1, "int8-pow2 global average pooling: the exact plane sum, divided in requantization",
                  [=](InferContext& c) {
                    codes(c, 0);
                    const Shape& x = c.inputShape(0);
                    if (x.size() < 3) c.error("input must be at least 3-D, got {}", shapeStr(x));
                    Shape out{x[0], x[1]};
                    out.resize(x.size(), 1);
                    c.setOutput(0, outType(table(c)), out);
                  }));
}


}  // namespace npuc::ops
