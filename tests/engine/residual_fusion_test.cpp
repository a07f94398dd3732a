// Engine::fuseResidualAdds: an Add that is the only reader of a Conv's output (and the activation after it) runs
// inside the Conv. Checked against the same graph run without the fusion (same bits), on which Adds it takes, and
// with a callback watching (each op's own output, as without the fusion).
#include "engine_test_util.hpp"

#include <limits>

namespace npuc::engine {
namespace {

using test::randomTensor;

// x [1,4,6,7]
//   c1 = Conv(x) ; r1 = Relu(Add(c1, x))                   fused, with the Relu (residual: a graph input)
//   c2 = Conv(r1); c3 = Conv(r1); s2 = Add(c2, c3)         fused into c3, the later Conv (c2 is ready by then)
//   c4 = Conv(s2) + bias; z = LeakyRelu(Add(s2, c4))        fused (the Conv as the Add's second operand)
//   c5 = Conv(x), also a graph output; u = Add(c5, x)       not fused: c5's values are an output of their own
//   c6 = Conv(x); v = Add(c6, per-channel constant)        not fused: the Add broadcasts
//   c7 = Conv(x); t = Add(c7, c8), c8 = Conv(x) after c7    fused into c8
//   depthwise d = Conv(t, group 4); q = Clip(Add(d, s2), 0, 6)   fused, with the Clip
//   c9 = Conv(x); p = Add(c9, Sigmoid(x)), the Sigmoid after c9   not fused: the residual is not ready for c9
//   e = Concat(Add(c10, x), Relu(Add(c11, x)))             fused; the aliases ignore placement: the Concat copies
struct Net {
  ir::Graph g;
  Net() {
    g.opset = 13;
    const Shape xs{1, 4, 6, 7};
    ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, xs)).id;
    g.inputs().push_back(x);
    uint32_t seed = 1;
    auto conv = [&](const std::string& name, ir::ValueId in, bool bias = false, int64_t group = 1) {
      std::vector<ir::ValueId> ins{in, g.addConstant(name + "_w", randomTensor({4, 4 / group, 3, 3}, seed++)).id};
      if (bias) ins.push_back(g.addConstant(name + "_b", randomTensor({4}, seed++)).id);
      ir::ValueId out = g.addValue(name).id;
      ir::Node& n = g.addNode("Conv", name + "_node", ins, {out});
      n.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
      n.attrs["group"] = group;
      return out;
    };
    auto op = [&](const std::string& type, const std::string& name, std::vector<ir::ValueId> ins) {
      ir::ValueId out = g.addValue(name).id;
      g.addNode(type, name + "_node", std::move(ins), {out});
      return out;
    };
    ir::ValueId c1 = conv("c1", x);
    ir::ValueId r1 = op("Relu", "r1", {op("Add", "s1", {c1, x})});
    ir::ValueId c2 = conv("c2", r1), c3 = conv("c3", r1);
    ir::ValueId s2 = op("Add", "s2", {c2, c3});
    ir::ValueId c4 = conv("c4", s2, true);
    ir::ValueId z = g.addValue("z").id;
    g.addNode("LeakyRelu", "z_node", {op("Add", "s3", {s2, c4})}, {z}).attrs["alpha"] = 0.1f;
    ir::ValueId c5 = conv("c5", x);
    ir::ValueId u = op("Add", "u", {c5, x});
    ir::ValueId c6 = conv("c6", x);
    ir::ValueId v = op("Add", "v", {c6, g.addConstant("v_b", randomTensor({4, 1, 1}, seed++)).id});
    ir::ValueId c7 = conv("c7", x), c8 = conv("c8", x);
    ir::ValueId t = op("Add", "t", {c7, c8});
    ir::ValueId d = conv("d", t, false, 4);
    ir::ValueId lo = g.addConstant("lo", Tensor::scalar(0.0f)).id, hi = g.addConstant("hi", Tensor::scalar(6.0f)).id;
    ir::ValueId q = op("Clip", "q", {op("Add", "s4", {d, s2}), lo, hi});
    ir::ValueId c9 = conv("c9", x);
    ir::ValueId p = op("Add", "p", {c9, op("Sigmoid", "sg", {x})});
    ir::ValueId c10 = conv("c10", x), c11 = conv("c11", x);
    ir::ValueId e = g.addValue("e").id;
    ir::ValueId s10 = op("Add", "s10", {c10, x}), r11 = op("Relu", "r11", {op("Add", "s11", {c11, x})});
    ir::Node& cat = g.addNode("Concat", "e_node", {s10, r11}, {e});
    cat.attrs["axis"] = int64_t{1};
    g.outputs() = {z, u, c5, v, q, s2, p, e};
    ops::inferShapes(g);
  }
};

TEST(ResidualFusion, SameBitsAsTheSeparateOps) {
  Net net;
  Tensor x = randomTensor({1, 4, 6, 7}, 99);
  x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[40] = std::numeric_limits<float>::infinity();
  EngineOptions off;
  off.fuse_residual_adds = false;
  EngineOptions none = off;
  none.fuse_activations = false;
  const std::vector<Tensor> want = Engine(net.g, none).run({x});
  Engine fused(net.g);
  EXPECT_EQ(fused.fusedResidualAdds(), 7u);  // s1, s2, s3, t, s4, s10, s11; not u (c5 is an output), v, p
  EXPECT_EQ(Engine(net.g, off).fusedResidualAdds(), 0u);
  test::expectSameBitsAtThreads(net.g, {x}, want);
}

TEST(ResidualFusion, CallbacksSeeEachOpsOwnOutput) {
  // Against the engine with no fusion at all: with a callback every fused op runs apart, computing its own output.
  Net net;
  const Tensor x = randomTensor({1, 4, 6, 7}, 7);
  EngineOptions off;
  off.fuse_residual_adds = false;
  off.fuse_activations = false;
  std::map<std::string, std::vector<uint32_t>> want, got;
  Engine(net.g, off).run({x}, test::keepOutputBits(want));
  Engine fused(net.g);
  ASSERT_GT(fused.fusedResidualAdds(), 0u);
  fused.run({x}, test::keepOutputBits(got));
  test::expectSameNodeBits(got, want);
  // And a run without a callback after one with: the fused form again, same outputs.
  test::expectSameBits(fused.run({x}), Engine(net.g, off).run({x}), "after a run with a callback");
}

}  // namespace
}  // namespace npuc::engine
