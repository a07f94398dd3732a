// Engine::planConcats: the producers of a Concat's inputs write straight into the Concat's output. Checked against
// the same graph run without placement (same values) and by looking at where the producers' outputs live.
#include "engine_test_util.hpp"


namespace npuc::engine {
namespace {

using test::randomTensor;

// x [1,3,6,7] -> conv a (+Relu, fused) -> | concat axis 1 -> y
//             -> conv b                  -> |
//             -> conv c -> (also a graph output) -> |
//             -> sigmoid s (read twice by the concat) -> |, |
struct Net {
  ir::Graph g;
  ir::ValueId a_conv, a, b, c, s, y;
  Net() {
    g.opset = 13;
    ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {1, 3, 6, 7})).id;
    g.inputs().push_back(x);
    auto conv = [&](const std::string& name, int64_t m, uint32_t seed) {
      ir::ValueId w = g.addConstant(name + "_w", randomTensor({m, 3, 3, 3}, seed)).id;
      ir::ValueId out = g.addValue(name).id;
      ir::Node& n = g.addNode("Conv", name + "_node", {x, w}, {out});
      n.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
      return out;
    };
    a_conv = conv("a_conv", 4, 1);
    a = g.addValue("a").id;
    g.addNode("Relu", "relu", {a_conv}, {a});
    b = conv("b", 5, 2);
    c = conv("c", 2, 3);
    s = g.addValue("s").id;
    g.addNode("Sigmoid", "sig", {x}, {s});
    y = g.addValue("y").id;
    ir::Node& cat = g.addNode("Concat", "cat", {a, b, c, s, s}, {y});
    cat.attrs["axis"] = int64_t{1};
    g.outputs() = {y, c};
    ops::inferShapes(g);
  }
};

TEST(ConcatPlacement, SameValuesAndProducersWriteInPlace) {
  Net net;
  const Tensor x = randomTensor({1, 3, 6, 7}, 9);
  EngineOptions off;
  off.place_concat_inputs = false;
  const std::vector<Tensor> want = Engine(net.g, off).run({x});
  std::map<std::string, Tensor> seen;
  Engine on(net.g);
  const std::vector<Tensor> got = on.run({x}, [&](const ir::Node& n, const std::vector<Tensor>& outs) {
    seen[n.name] = outs[0];
  });
  test::expectSameBits(got, want);
  const auto* y = static_cast<const uint8_t*>(got[0].raw());
  const size_t plane = 6 * 7 * sizeof(float);
  // a (through its fused Relu) and b are written in place; c is a graph output and s is read twice: copied. (With
  // a callback watching, the Relu runs apart on the Conv's output in place and the Concat copies its own output.)
  EXPECT_EQ(static_cast<const uint8_t*>(seen.at("a_conv_node").raw()), y);
  EXPECT_NE(static_cast<const uint8_t*>(seen.at("relu").raw()), y);
  EXPECT_EQ(static_cast<const uint8_t*>(seen.at("b_node").raw()), y + 4 * plane);
  EXPECT_NE(seen.at("c_node").buffer(), got[0].buffer());
  EXPECT_NE(seen.at("sig").buffer(), got[0].buffer());
}

TEST(ConcatPlacement, RunsTwiceWithFreshOutputs) {
  Net net;
  Engine e(net.g);
  const Tensor x1 = randomTensor({1, 3, 6, 7}, 10), x2 = randomTensor({1, 3, 6, 7}, 11);
  const Tensor y1 = e.run({x1})[0];
  const std::vector<float> keep(y1.data<float>(), y1.data<float>() + y1.numel());
  const Tensor y2 = e.run({x2})[0];
  EXPECT_NE(y1.buffer(), y2.buffer());  // the first result is not overwritten by the second run
  EXPECT_EQ(std::memcmp(keep.data(), y1.raw(), y1.nbytes()), 0);
  EngineOptions off;
  off.place_concat_inputs = false;
  const Tensor w2 = Engine(net.g, off).run({x2})[0];
  EXPECT_EQ(std::memcmp(w2.raw(), y2.raw(), y2.nbytes()), 0);
}

}  // namespace
}  // namespace npuc::engine
