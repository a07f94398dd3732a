// Schemas of neural-network ops: Conv, ConvTranspose, Gemm, MatMul, pooling, normalisation, LRN, Softmax.
#include "ops/einsum.hpp"
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"
#include "ops/window.hpp"

#include <map>

namespace npuc::ops {

namespace {

std::vector<int64_t> spatial(const Shape& s) { return std::vector<int64_t>(s.begin() + 2, s.end()); }

void needFloat(InferContext& c, int i) {
  if (!isFloat(c.inputDType(i))) c.unsupported("input {} is {}; only floating-point is supported", i, dtypeName(c.inputDType(i)));
}

int64_t numel(const ir::Type& t) { return shapeNumel(t.shape); }

}  // namespace

void registerNnOps(Registry& r) {
  {
    OpSchema s = makeSchema("Conv", 2, 3, "N-D convolution (groups, dilations, pads, auto_pad)", [](InferContext& c) {
      needFloat(c, 0);
      const Shape& x = c.inputShape(0);
      const Shape& w = c.inputShape(1);
      if (x.size() < 3) c.error("input must be at least 3-D (N, C, spatial…), got {}", shapeStr(x));
      if (w.size() != x.size()) c.error("weights {} and input {} differ in rank", shapeStr(w), shapeStr(x));
      int64_t g = c.node().attrInt("group", 1);
      if (g <= 0 || x[1] % g || w[0] % g) c.error("group {} must divide input channels {} and output channels {}", g, x[1], w[0]);
      if (w[1] * g != x[1]) c.error("weights expect {} input channels per group, input has {} channels in {} groups", w[1], x[1], g);
      if (c.hasInput(2) && c.inputShape(2) != Shape{w[0]}) c.error("bias must be [{}], got {}", w[0], shapeStr(c.inputShape(2)));
      Window win = resolveWindow(c.node(), spatial(x), spatial(w), false);
      Shape out{x[0], w[0]};
      out.insert(out.end(), win.out.begin(), win.out.end());
      c.setOutput(0, c.inputDType(0), out);
    });
    s.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out) {
      return numel(out[0]) * (numel(in[1]) / in[1].shape[0]);
    };
    r.add(s);
  }
  {
    OpSchema s = makeSchema("ConvTranspose", 2, 3, "N-D transposed convolution", [](InferContext& c) {
      needFloat(c, 0);
      const Shape& x = c.inputShape(0);
      const Shape& w = c.inputShape(1);
      if (x.size() < 3 || w.size() != x.size()) c.error("input {} and weights {} must be N-D with equal rank", shapeStr(x), shapeStr(w));
      int64_t g = c.node().attrInt("group", 1);
      if (g <= 0 || w[0] != x[1] || x[1] % g) c.error("weights {} do not match input channels {} with group {}", shapeStr(w), x[1], g);
      Window win = resolveTransposedWindow(c.node(), spatial(x), spatial(w));
      Shape out{x[0], w[1] * g};
      out.insert(out.end(), win.out.begin(), win.out.end());
      c.setOutput(0, c.inputDType(0), out);
    });
    s.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out) {
      return numel(in[0]) * (numel(in[1]) / in[1].shape[0]);
    };
    r.add(s);
  }
  {
    OpSchema s = makeSchema("Gemm", 2, 3, "alpha*op(A)*op(B) + beta*C", [](InferContext& c) {
      needFloat(c, 0);
      Shape a = c.inputShape(0), b = c.inputShape(1);
      if (a.size() != 2 || b.size() != 2) c.error("A {} and B {} must be 2-D", shapeStr(a), shapeStr(b));
      if (c.node().attrInt("transA", 0)) std::swap(a[0], a[1]);
      if (c.node().attrInt("transB", 0)) std::swap(b[0], b[1]);
      if (a[1] != b[0]) c.error("inner dimensions differ: A is {}x{}, B is {}x{}", a[0], a[1], b[0], b[1]);
      Shape out{a[0], b[1]};
      if (c.hasInput(2)) {
        Shape bc;
        if (!broadcastShapes(out, c.inputShape(2), bc) || bc != out)
          c.error("C {} does not broadcast to {}", shapeStr(c.inputShape(2)), shapeStr(out));
      }
      c.setOutput(0, c.inputDType(0), out);
    });
    s.macs = [](const ir::Node& n, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out) {
      int64_t k = n.attrInt("transA", 0) ? in[0].shape[0] : in[0].shape[1];
      return numel(out[0]) * k;
    };
    s.withDefault("alpha", 1.0f).withDefault("beta", 1.0f).withDefault("transA", int64_t{0}).withDefault("transB", int64_t{0});
    r.add(s);
  }
  r.add(makeSchema("Det", 1, 1, "determinant of each square matrix of the last two dims", [](InferContext& c) {
    needFloat(c, 0);
    const Shape& x = c.inputShape(0);
    if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2]) c.error("input must be [*, M, M], got {}", shapeStr(x));
    c.setOutput(0, c.inputDType(0), Shape(x.begin(), x.end() - 2));
  }));
  r.add(makeSchema("Einsum", 1, -1, "Einstein summation (any operands, ellipses, diagonals, implicit output)",
                   [](InferContext& c) {
    std::vector<Shape> shapes;
    for (int i = 0; i < c.numInputs(); ++i) shapes.push_back(c.inputShape(i));
    EinsumTerms t;
    std::string why;
    if (!einsumTerms(c.node().attrString("equation", ""), shapes, &t, &why)) c.error("{}", why);
    for (int i = 1; i < c.numInputs(); ++i)
      if (c.inputDType(i) != c.inputDType(0)) c.error("input {} is {}, input 0 {}", i, dtypeName(c.inputDType(i)), dtypeName(c.inputDType(0)));
    Shape out;
    for (char ch : t.out) out.push_back(t.dims.at(ch));
    c.setOutput(0, c.inputDType(0), out);
  }));
  {
    OpSchema s = makeSchema("MatMul", 2, 2, "numpy matmul (batched, broadcast)", [](InferContext& c) {
      Shape a = c.inputShape(0), b = c.inputShape(1);
      if (a.empty() || b.empty()) c.error("inputs must not be scalars");
      bool va = a.size() == 1, vb = b.size() == 1;
      if (va) a.insert(a.begin(), 1);
      if (vb) b.push_back(1);
      if (a.back() != b[b.size() - 2]) c.error("inner dimensions differ: {} vs {}", shapeStr(c.inputShape(0)), shapeStr(c.inputShape(1)));
      Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2), out;
      if (!broadcastShapes(ba, bb, out)) c.error("batch dims {} and {} do not broadcast", shapeStr(ba), shapeStr(bb));
      if (!va) out.push_back(a[a.size() - 2]);
      if (!vb) out.push_back(b.back());
      c.setOutput(0, c.inputDType(0), out);
    });
    s.macs = [](const ir::Node&, const std::vector<ir::Type>& in, const std::vector<ir::Type>& out) {
      return numel(out[0]) * in[0].shape.back();
    };
    r.add(s);
  }
  auto pool = [](bool global, bool int8 = false) {
    return [global, int8](InferContext& c) {
      const DType t = c.inputDType(0);  // (MaxPool also selects int8 / uint8 codes and 16-bit integers)
      if (!(int8 && (t == DType::kI8 || t == DType::kU8 || t == DType::kI16 || t == DType::kU16))) needFloat(c, 0);
      const Shape& x = c.inputShape(0);
      if (x.size() < 3) c.error("input must be at least 3-D (N, C, spatial…), got {}", shapeStr(x));
      Shape out{x[0], x[1]};
      if (global) {
        out.resize(x.size(), 1);
      } else {
        Window w = resolvePoolWindow(c.node(), x);
        out.insert(out.end(), w.out.begin(), w.out.end());
      }
      c.setOutput(0, c.inputDType(0), out);
      c.setOutput(1, DType::kI64, out);
    };
  };
  r.add(makeSchema("AveragePool", 1, 1, "average over windows (count_include_pad)", pool(false)));
  r.add(makeSchema("MaxPool", 1, 1, "maximum over windows (dilations, ceil_mode; optional indices; float or int8)", pool(false, true), 2));
  r.add(makeSchema("LpPool", 1, 1, "Lp norm over windows", pool(false)));
  r.add(makeSchema("GlobalAveragePool", 1, 1, "average over all spatial positions", pool(true)));
  r.add(makeSchema("GlobalMaxPool", 1, 1, "maximum over all spatial positions", pool(true)));
  r.add(makeSchema("GlobalLpPool", 1, 1, "Lp norm over all spatial positions", pool(true)));
  {
    OpSchema s = makeSchema("BatchNormalization", 5, 5, "inference-mode batch normalisation", [](InferContext& c) {
      needFloat(c, 0);
      const Shape& x = c.inputShape(0);
      if (x.size() < 2) c.error("input must be at least 2-D, got {}", shapeStr(x));
      for (int i = 1; i < 5; ++i)
        if (c.inputShape(i) != Shape{x[1]}) c.error("input {} must be [{}], got {}", i, x[1], shapeStr(c.inputShape(i)));
      if (c.node().attrInt("training_mode", 0)) c.unsupported("training_mode=1 is not supported (inference only)");
      c.setOutput(0, c.inputDType(0), x);
    }, 5);
    s.withDefault("epsilon", 1e-5f).withDefault("momentum", 0.9f);
    r.add(s);
  }
  r.add(makeSchema("InstanceNormalization", 3, 3, "per-instance, per-channel normalisation", [](InferContext& c) {
    needFloat(c, 0);
    const Shape& x = c.inputShape(0);
    if (x.size() < 3) c.error("input must be at least 3-D, got {}", shapeStr(x));
    for (int i = 1; i < 3; ++i)
      if (c.inputShape(i) != Shape{x[1]}) c.error("input {} must be [{}], got {}", i, x[1], shapeStr(c.inputShape(i)));
    c.setOutput(0, c.inputDType(0), x);
  }).withDefault("epsilon", 1e-5f));
  r.add(makeSchema("LRN", 1, 1, "local response normalisation across channels", [](InferContext& c) {
    needFloat(c, 0);
    if (c.inputRank(0) < 3) c.error("input must be at least 3-D");
    if (c.node().attrInt("size", 0) <= 0) c.error("attribute 'size' must be positive");
    c.setOutput(0, c.inputDType(0), c.inputShape(0));
  }).withDefault("alpha", 1e-4f).withDefault("beta", 0.75f).withDefault("bias", 1.0f));
  for (const char* n : {"Softmax", "LogSoftmax", "Hardmax"}) {
    r.add(makeSchema(n, 1, 1, "normalised exponential along 'axis' (opset < 13: over the flattened trailing dims)",
                 [](InferContext& c) {
                   int64_t rank = c.inputRank(0);
                   int64_t axis = c.node().attrInt("axis", c.opset() < 13 ? 1 : -1);
                   if (!normalizeAxis(axis, std::max<int64_t>(rank, 1))) c.error("axis {} out of range for rank {}", axis, rank);
                   c.setOutput(0, c.inputDType(0), c.inputShape(0));
                 }));
  }
}

}  // namespace npuc::ops
