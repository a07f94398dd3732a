// Engine::fuseActivations: an activation that is the only reader of a Conv's or float arithmetic op's output, and
// x * HardSigmoid(x) (HardSwish as opset 13 exports it), run in the producer's epilogue. Checked against the same
// graph run without fusions (same bits), on which pairs it takes, and with a callback watching (every fusion apart:
// each op's own output, a Conv's before its activation).
#include "engine_test_util.hpp"

#include <limits>

namespace npuc::engine {
namespace {

using test::randomTensor;

// x [1,8,6,7]
//   c1 = Conv(x); m1 = c1 * HardSigmoid(c1; 1/6, 1/2)              fused into c1
//   c2 = Conv(m1); m2 = HardSigmoid(c2) * c2 (default 0.2, 0.5)     fused into c2 (the Mul's operands swapped)
//   c3 = Conv(m2); m3 = c3 * h3, h3 = HardSigmoid(c3) an output     not fused: h3 is read from outside
//   c4 = Conv(x); m4 = c4 * HardSigmoid(c4); r4 = Relu(c4)          not fused: c4 has a third reader
//   SE: f2 = Conv1x1(Relu(Conv1x1(GlobalAveragePool(m2))))         the gate's HardSigmoid fused into f2 (an
//       se = Mul(m2, HardSigmoid(f2))                                activation of its own), the Mul broadcasts
//   a5 = Add(m1, x); m5 = a5 * HardSigmoid(a5)                     fused into the Add
//   s8 = Sub(m1, per-channel constant); m8 = HardSigmoid(s8) * s8   fused into the Sub (its per-row loop)
//   cat = Concat(c6 * HardSigmoid(c6), Relu(Add(c7, x)))           fused into c6; c7's residual Add and Relu
//                                                                   fused, c7 writing into the Concat's output
struct Net {
  ir::Graph g;
  uint32_t seed = 1;
  ir::ValueId conv(const std::string& name, ir::ValueId in, int64_t c, int64_t m, int64_t k) {
    std::vector<ir::ValueId> ins{in, g.addConstant(name + "_w", randomTensor({m, c, k, k}, seed++)).id,
                                 g.addConstant(name + "_b", randomTensor({m}, seed++)).id};
    ir::ValueId out = g.addValue(name).id;
    g.addNode("Conv", name + "_node", ins, {out}).attrs["pads"] = std::vector<int64_t>(4, k / 2);
    return out;
  }
  ir::ValueId op(const std::string& type, const std::string& name, std::vector<ir::ValueId> ins) {
    ir::ValueId out = g.addValue(name).id;
    g.addNode(type, name + "_node", std::move(ins), {out});
    return out;
  }
  ir::ValueId hardSigmoid(const std::string& name, ir::ValueId in, bool attrs = true) {
    ir::ValueId h = op("HardSigmoid", name, {in});
    if (attrs) {
      g.node(g.value(h).producer).attrs["alpha"] = 1.0f / 6.0f;
      g.node(g.value(h).producer).attrs["beta"] = 0.5f;
    }
    return h;
  }
  Net() {
    g.opset = 13;
    ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 8, 6, 7})).id;
    g.inputs().push_back(x);
    ir::ValueId c1 = conv("c1", x, 8, 8, 3);
    ir::ValueId m1 = op("Mul", "m1", {c1, hardSigmoid("h1", c1)});
    ir::ValueId c2 = conv("c2", m1, 8, 8, 3);
    ir::ValueId m2 = op("Mul", "m2", {hardSigmoid("h2", c2, false), c2});
    ir::ValueId c3 = conv("c3", m2, 8, 8, 3);
    ir::ValueId h3 = hardSigmoid("h3", c3);
    ir::ValueId m3 = op("Mul", "m3", {c3, h3});
    ir::ValueId c4 = conv("c4", x, 8, 8, 1);
    ir::ValueId m4 = op("Mul", "m4", {c4, hardSigmoid("h4", c4)});
    ir::ValueId r4 = op("Relu", "r4", {c4});
    ir::ValueId f1 = op("Relu", "f1", {conv("f1c", op("GlobalAveragePool", "gp", {m2}), 8, 4, 1)});
    ir::ValueId se = op("Mul", "se", {m2, hardSigmoid("gate", conv("f2", f1, 4, 8, 1))});
    ir::ValueId a5 = op("Add", "a5", {m1, x});
    ir::ValueId m5 = op("Mul", "m5", {a5, hardSigmoid("h5", a5)});
    ir::ValueId s8 = op("Sub", "s8", {m1, g.addConstant("s8_c", randomTensor({8, 1, 1}, seed++)).id});
    ir::ValueId m8 = op("Mul", "m8", {hardSigmoid("h8", s8), s8});
    ir::ValueId c6 = conv("c6", x, 8, 8, 3);
    ir::ValueId m6 = op("Mul", "m6", {c6, hardSigmoid("h6", c6)});
    ir::ValueId r7 = op("Relu", "r7", {op("Add", "s7", {conv("c7", x, 8, 8, 3), x})});
    ir::ValueId cat = g.addValue("cat").id;
    g.addNode("Concat", "cat_node", {m6, r7}, {cat}).attrs["axis"] = int64_t{1};
    g.outputs() = {m3, h3, m4, r4, se, m5, m8, cat};
    ops::inferShapes(g);
  }
};

// Values past both corners of the HardSigmoids; with `specials`, a NaN and infinities too (which then reach every
// value after the global pool: the SE path is checked on the finite input).
Tensor input(bool specials) {
  Tensor x = randomTensor({1, 8, 6, 7}, 99);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 6.0f;
  if (specials) {
    x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    x.data<float>()[40] = std::numeric_limits<float>::infinity();
    x.data<float>()[77] = -std::numeric_limits<float>::infinity();
  }
  return x;
}

EngineOptions noFusions() {
  EngineOptions o;
  o.fuse_activations = false;
  o.fuse_residual_adds = false;
  o.block_channels = false;
  o.place_concat_inputs = false;
  return o;
}

TEST(ActivationFusion, SameBitsAsTheSeparateOps) {
  Net net;
  EXPECT_EQ(Engine(net.g).fusedSigmoidMuls(), 5u);  // c1, c2, a5, s8, c6; not c3 (h3 an output), c4 (three readers)
  EXPECT_EQ(Engine(net.g, noFusions()).fusedSigmoidMuls(), 0u);
  for (bool specials : {false, true}) {
    const Tensor x = input(specials);
    test::expectSameBitsAtThreads(net.g, {x}, Engine(net.g, noFusions()).run({x}));
  }
}

TEST(ActivationFusion, CallbacksSeeEachOpsOwnOutput) {
  Net net;
  const Tensor x = input(false);
  std::map<std::string, std::vector<uint32_t>> want, got;
  Engine(net.g, noFusions()).run({x}, test::keepOutputBits(want));
  Engine fused(net.g);
  fused.run({x}, test::keepOutputBits(got));
  test::expectSameNodeBits(got, want);
  // And a run without a callback after one with: the fused form again, same outputs.
  test::expectSameBits(fused.run({x}), Engine(net.g, noFusions()).run({x}), "after a run with a callback");
}

}  // namespace
}  // namespace npuc::engine
