// Engine::blockChannels: a depthwise Conv hands its output to the pointwise Conv that alone reads it channel-blocked
// (kernels::Layout::kBlocked8). Checked against the same graph run in planes (same bits), on which pairs it takes,
// with a callback watching (planes: each op's own output as without it), and with the kernel table changed after
// the plan (the kernels then reorder: still the same bits).
#include "engine_test_util.hpp"

#include "engine/conv_geometry.hpp"
#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace npuc::engine {
namespace {

using test::randomTensor;

// x [1,16,10,10]; e = Clip(Conv1x1(x) 16 -> 32, 0, 6)
//   d = Clip(dw3x3(e)); p = Conv1x1(d) 32 -> 16; out = Add(p, x)     pair (the Clip fused into d, the Add into p)
//   d2 = dw3x3/2(e); p2 = Conv1x1(d2) 32 -> 24                        pair (no activation)
//   d3 = dw3x3(e), also a graph output; p3 = Conv1x1(d3)              not: d3 is read from outside too
//   d4 = dw3x3(e); p4 = Conv1x1(d4) 32 -> 72                          not: more than 64 output channels
//   d5 = dw3x3(e); p5 = Conv3x3(d5) 32 -> 8                           not: not pointwise
struct Net {
  ir::Graph g;
  explicit Net(int64_t batch = 1) {
    g.opset = 13;
    ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {batch, 16, 10, 10})).id;
    g.inputs().push_back(x);
    uint32_t seed = 1;
    auto conv = [&](const std::string& name, ir::ValueId in, int64_t c, int64_t m, int64_t k, int64_t group = 1,
                    int64_t stride = 1) {
      ir::ValueId w = g.addConstant(name + "_w", randomTensor({m, c / group, k, k}, seed++)).id;
      ir::ValueId b = g.addConstant(name + "_b", randomTensor({m}, seed++)).id;
      ir::ValueId out = g.addValue(name).id;
      ir::Node& n = g.addNode("Conv", name + "_node", {in, w, b}, {out});
      n.attrs["pads"] = std::vector<int64_t>(4, k / 2);
      n.attrs["strides"] = std::vector<int64_t>{stride, stride};
      n.attrs["group"] = group;
      return out;
    };
    ir::ValueId lo = g.addConstant("lo", Tensor::scalar(0.0f)).id, hi = g.addConstant("hi", Tensor::scalar(6.0f)).id;
    auto clip = [&](const std::string& name, ir::ValueId in) {
      ir::ValueId out = g.addValue(name).id;
      g.addNode("Clip", name + "_node", {in, lo, hi}, {out});
      return out;
    };
    ir::ValueId e = clip("e", conv("c0", x, 16, 32, 1));
    ir::ValueId p = conv("p", clip("d", conv("dw", e, 32, 32, 3, 32)), 32, 16, 1);
    ir::ValueId out = g.addValue("out").id;
    g.addNode("Add", "out_node", {p, x}, {out});
    ir::ValueId p2 = conv("p2", conv("d2", e, 32, 32, 3, 32, 2), 32, 24, 1);
    ir::ValueId d3 = conv("d3", e, 32, 32, 3, 32);
    ir::ValueId p3 = conv("p3", d3, 32, 16, 1);
    ir::ValueId p4 = conv("p4", conv("d4", e, 32, 32, 3, 32), 32, 72, 1);
    ir::ValueId p5 = conv("p5", conv("d5", e, 32, 32, 3, 32), 32, 8, 3);
    g.outputs() = {out, p2, d3, p3, p4, p5};
    ops::inferShapes(g);
  }
};

void expectSameBits(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << what << " output " << i;
    EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), got[i].nbytes()), 0) << what << " output " << i;
  }
}

const ir::Node& nodeNamed(const ir::Graph& g, const std::string& name) {
  for (ir::NodeId id : g.order())
    if (g.node(id).name == name) return g.node(id);
  throw std::runtime_error("no node " + name);
}

struct IsaGuard {
  const char* isa = kernels::forceKernelIsa("auto");
  IsaGuard() { kernels::forceKernelIsa(isa); }
  ~IsaGuard() { kernels::forceKernelIsa(isa); }
};

TEST(ChannelBlocking, SameBitsAsPlanes) {
  IsaGuard guard;
  for (const int64_t batch : {1, 2}) {
    Net net(batch);
    Tensor x = randomTensor({batch, 16, 10, 10}, 99);
    x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    x.data<float>()[40] = -0.0f;
    EngineOptions planes;
    planes.block_channels = false;
    const std::vector<Tensor> want = Engine(net.g, planes).run({x});
    EXPECT_EQ(Engine(net.g, planes).blockedPairs(), 0u);
    for (const char* isa : {"avx2", "auto", "portable"}) {
      kernels::forceKernelIsa(isa);
      // The pairs this table takes: d -> p and d2 -> p2 where blockedPairPays says so (the AVX2 table: both).
      size_t pays = 0;
      for (const char* dw : {"dw_node", "d2_node"}) {
        const ir::Node& d = nodeNamed(net.g, dw);
        const ir::Node& pw = nodeNamed(net.g, std::string(dw) == "dw_node" ? "p_node" : "p2_node");
        auto shapeOf = [&](ir::ValueId v) { return net.g.value(v).type.shape; };
        pays += kernels::blockedPairPays(convShapeOf(d, shapeOf(d.inputs[0]), shapeOf(d.inputs[1])),
                                         convShapeOf(pw, shapeOf(pw.inputs[0]), shapeOf(pw.inputs[1])));
      }
      if (std::string(isa) == "avx2" && std::string(kernels::sgemmVariant()) == "avx2_fma") {
        EXPECT_EQ(pays, 2u);
      }
      for (int threads : {1, 2, 3}) {
        EngineOptions o;
        o.threads = threads;
        Engine e(net.g, o);
        EXPECT_EQ(e.blockedPairs(), pays) << isa;
        expectSameBits(e.run({x}), want, std::string(isa) + " threads " + std::to_string(threads));
        expectSameBits(e.run({x}), want, "again");  // prepared once, run again
        // The plan made on one table, run on the others: the kernels reorder where theirs has no blocked form.
        for (const char* other : {"portable", "avx2", "avx512"}) {
          kernels::forceKernelIsa(other);
          expectSameBits(e.run({x}), want, std::string(isa) + " planned, run on " + other);
        }
        kernels::forceKernelIsa(isa);
      }
    }
  }
}

TEST(ChannelBlocking, CallbacksSeePlanes) {
  IsaGuard guard;
  kernels::forceKernelIsa("avx2");
  Net net;
  const Tensor x = randomTensor({1, 16, 10, 10}, 7);
  EngineOptions planes;
  planes.block_channels = false;
  std::map<std::string, std::vector<float>> want, got;
  auto keep = [](std::map<std::string, std::vector<float>>& m) {
    return [&m](const ir::Node& n, const std::vector<Tensor>& outs) {
      m[n.name].assign(outs[0].data<float>(), outs[0].data<float>() + outs[0].numel());
    };
  };
  Engine(net.g, planes).run({x}, keep(want));
  Engine blocked(net.g);
  if (std::string(kernels::sgemmVariant()) == "avx2_fma") {
    EXPECT_EQ(blocked.blockedPairs(), 2u);  // (so that the callback run below is one the plan would block)
  }
  blocked.run({x}, keep(got));
  ASSERT_EQ(got.size(), want.size());
  for (auto& [name, values] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_EQ(std::memcmp(got[name].data(), values.data(), values.size() * sizeof(float)), 0) << name;
  }
  expectSameBits(blocked.run({x}), Engine(net.g, planes).run({x}), "after a run with a callback");
}

}  // namespace
}  // namespace npuc::engine
