// Schemas of element-wise ops: unary math and activations, binary arithmetic/comparison/logic with numpy
// broadcasting, variadic Max/Min/Mean/Sum, Where, Clip, Cast.
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

namespace npuc::ops {

namespace {

void sameAsInput0(InferContext& c) { c.setOutput(0, c.inputDType(0), c.inputShape(0)); }

Shape broadcastAll(InferContext& c) {
  Shape s = c.inputShape(0);
  for (int i = 1; i < c.numInputs(); ++i) {
    if (!c.hasInput(i)) continue;
    Shape o;
    if (!broadcastShapes(s, c.inputShape(i), o))
      c.error("inputs of shapes {} and {} cannot be broadcast together", shapeStr(s), shapeStr(c.inputShape(i)));
    s = o;
  }
  return s;
}

void checkSameTypes(InferContext& c, int first, int last) {
  DType t = c.inputDType(first);
  for (int i = first + 1; i <= last && i < c.numInputs(); ++i)
    if (c.hasInput(i) && c.inputDType(i) != t)
      c.error("input {} is {} but input {} is {}; they must match", first, dtypeName(t), i, dtypeName(c.inputDType(i)));
}

OpSchema unary(const char* name, const char* doc, int max_in = 1) {
  OpSchema s;
  s.name = name;
  s.max_inputs = max_in;
  s.infer = sameAsInput0;
  s.doc = doc;
  return s;
}

OpSchema binary(const char* name, const char* doc, bool to_bool) {
  OpSchema s;
  s.name = name;
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.infer = [to_bool](InferContext& c) {
    if (c.node().op != "Pow" && c.node().op != "PRelu") checkSameTypes(c, 0, 1);
    c.setOutput(0, to_bool ? DType::kBool : c.inputDType(0), broadcastAll(c));
  };
  s.doc = doc;
  return s;
}

OpSchema variadic(const char* name, const char* doc) {
  OpSchema s;
  s.name = name;
  s.min_inputs = 1;
  s.max_inputs = -1;
  s.infer = [](InferContext& c) {
    checkSameTypes(c, 0, c.numInputs() - 1);
    c.setOutput(0, c.inputDType(0), broadcastAll(c));
  };
  s.doc = doc;
  return s;
}

}  // namespace

void registerElementwiseOps(Registry& r) {
  struct U { const char* n; const char* d; };
  for (U u : {U{"Abs", "|x|"}, U{"Ceil", "round up"}, U{"Floor", "round down"}, U{"Neg", "-x"},
              U{"Sqrt", "square root"}, U{"Exp", "e^x"}, U{"Log", "natural logarithm"},
              U{"Erf", "Gauss error function"}, U{"Reciprocal", "1/x"}, U{"Sigmoid", "1/(1+e^-x)"},
              U{"Tanh", "hyperbolic tangent"}, U{"Relu", "max(x, 0)"}, U{"Sign", "-1, 0 or 1"},
              U{"Softplus", "log(1+e^x)"}, U{"Softsign", "x/(1+|x|)"}, U{"Elu", "alpha*(e^x-1) for x<0"},
              U{"Selu", "scaled ELU"}, U{"LeakyRelu", "alpha*x for x<0"}, U{"HardSigmoid", "clamp(alpha*x+beta, 0, 1)"},
              U{"HardSwish", "x*HardSigmoid(x) with alpha=1/6, beta=0.5"}, U{"Mish", "x*tanh(softplus(x))"},
              U{"Not", "logical not"}, U{"Identity", "copy"}, U{"Round", "round half to even"},
              U{"Sin", "sine"}, U{"Cos", "cosine"}, U{"Tan", "tangent"}, U{"Asin", "arc sine"},
              U{"Acos", "arc cosine"}, U{"Atan", "arc tangent"}, U{"Sinh", "hyperbolic sine"},
              U{"Cosh", "hyperbolic cosine"}, U{"Asinh", "inverse hyperbolic sine"},
              U{"Acosh", "inverse hyperbolic cosine"}, U{"Atanh", "inverse hyperbolic tangent"},
              U{"IsNaN", "x is NaN"}, U{"IsInf", "x is infinite"}, U{"ThresholdedRelu", "x if x>alpha else 0"},
              U{"Celu", "continuously differentiable ELU"}, U{"Shrink", "shrink towards zero"}}) {
    OpSchema s = unary(u.n, u.d);
    // ONNX's defaults, declared once (the engine, the passes and the lowering read them through ops::attrFloat).
    const std::string name = u.n;
    if (name == "LeakyRelu") s.withDefault("alpha", 0.01f);
    if (name == "HardSigmoid") s.withDefault("alpha", 0.2f).withDefault("beta", 0.5f);
    if (name == "Elu" || name == "Celu" || name == "ThresholdedRelu") s.withDefault("alpha", 1.0f);
    if (name == "Selu") s.withDefault("alpha", 1.67326319217681884765625f).withDefault("gamma", 1.05070102214813232421875f);
    if (name == "Shrink") s.withDefault("bias", 0.0f).withDefault("lambd", 0.5f);
    if (name == "IsNaN" || name == "IsInf")
      s.infer = [](InferContext& c) { c.setOutput(0, DType::kBool, c.inputShape(0)); };
    r.add(s);
  }
  {
    OpSchema s = unary("Dropout", "identity at inference (optional mask output of ones)", 3);
    s.max_outputs = 2;
    s.infer = [](InferContext& c) {
      c.setOutput(0, c.inputDType(0), c.inputShape(0));
      c.setOutput(1, DType::kBool, c.inputShape(0));
    };
    r.add(s);
  }
  {
    OpSchema s = unary("Clip", "clamp(x, min, max); bounds from attributes (opset < 11) or inputs", 3);
    r.add(s);
  }
  {
    OpSchema s = unary("Cast", "convert element type (attribute 'to')");
    s.infer = [](InferContext& c) {
      int64_t to = c.node().attrInt("to", -1);
      DType t = dtypeFromOnnxCode(to);
      if (t == DType::kUndefined) c.unsupported("cast to ONNX type {} is not supported", to);
      c.setOutput(0, t, c.inputShape(0));
    };
    r.add(s);
  }
  {
    OpSchema s = unary("CastLike", "convert element type to that of input 1", 2);
    s.min_inputs = 2;
    s.infer = [](InferContext& c) { c.setOutput(0, c.inputDType(1), c.inputShape(0)); };
    r.add(s);
  }
  for (U u : {U{"Add", "a+b"}, U{"Sub", "a-b"}, U{"Mul", "a*b"}, U{"Div", "a/b"}, U{"Pow", "a^b"},
              U{"PRelu", "slope*x for x<0 (slope broadcast)"}, U{"Mod", "remainder"}, U{"BitShift", "bit shift"}})
    r.add(binary(u.n, u.d, false));
  for (U u : {U{"Equal", "a==b"}, U{"Greater", "a>b"}, U{"Less", "a<b"}, U{"GreaterOrEqual", "a>=b"},
              U{"LessOrEqual", "a<=b"}, U{"And", "logical and"}, U{"Or", "logical or"}, U{"Xor", "logical xor"}})
    r.add(binary(u.n, u.d, true));
  for (U u : {U{"Max", "element-wise maximum"}, U{"Min", "element-wise minimum"}, U{"Mean", "element-wise mean"},
              U{"Sum", "element-wise sum"}})
    r.add(variadic(u.n, u.d));
  {
    OpSchema s;
    s.name = "Where";
    s.min_inputs = s.max_inputs = 3;
    s.doc = "select x where cond else y (broadcast)";
    s.infer = [](InferContext& c) {
      if (c.inputDType(0) != DType::kBool) c.error("condition must be bool, got {}", dtypeName(c.inputDType(0)));
      checkSameTypes(c, 1, 2);
      c.setOutput(0, c.inputDType(1), broadcastAll(c));
    };
    r.add(s);
  }
}


}  // namespace npuc::ops
