// Engine::blockChannels: Convs hand their values on channel-blocked (kernels::Layout::kBlocked8) where the producer
// and every reader have a blocked form (kernels::blockedForms), through fused activations and residual Adds.
// Checked against the same graph run in planes (same bits), on which values it blocks, with a callback watching
// (planes: each op's own output as without it), and with the kernel table changed after the plan (the kernels then
// reorder: still the same bits).
#include "engine_test_util.hpp"

#include "kernels/conv.hpp"
#include "kernels/gemm.hpp"

#include <limits>

namespace npuc::engine {
namespace {

using test::expectSameBits;
using test::randomTensor;

// x [1,16,10,10]; e = Clip(Conv1x1(x) 16 -> 32, 0, 6)                e not: a pointwise expansion writes planes
//   d = Clip(dw3x3(e)); p = Conv1x1(d) 32 -> 16; out = Add(p, x)     d blocked (the Clip fused into d, the Add into
//                                                                    p); out not (a graph output; x: a graph input)
//   d2 = dw3x3/2(e); p2 = Conv1x1(d2) 32 -> 24                        d2 blocked (no activation)
//   d3 = dw3x3(e), also a graph output; p3 = Conv1x1(d3)              d3 not: read from outside too
//   d4 = dw3x3(e); p4 = Conv1x1(d4) 32 -> 72                          d4 blocked (p4 packs its B from the blocks)
//   d5 = dw3x3(e); p5 = Conv3x3(d5) 32 -> 8                           d5 not: p5 (8 output channels) has no blocked form
// Graph building: Convs with random weights and biases, Clip(0, 6), Relu, Add.
struct Builder {
  ir::Graph g;
  uint32_t seed = 1;
  ir::ValueId lo = ir::kNoValue, hi = ir::kNoValue;
  Builder() {
    g.opset = 13;
    lo = g.addConstant("lo", Tensor::scalar(0.0f)).id, hi = g.addConstant("hi", Tensor::scalar(6.0f)).id;
  }
  // The graph's input x: float32 [batch, c, side, side].
  ir::ValueId input(int64_t batch, int64_t c, int64_t side) {
    ir::ValueId x = g.addValue("x", ir::makeType(DType::kF32, {batch, c, side, side})).id;
    g.inputs().push_back(x);
    return x;
  }
  ir::ValueId conv(const std::string& name, ir::ValueId in, int64_t c, int64_t m, int64_t k, int64_t group = 1,
                   int64_t stride = 1) {
    ir::ValueId w = g.addConstant(name + "_w", randomTensor({m, c / group, k, k}, seed++)).id;
    ir::ValueId b = g.addConstant(name + "_b", randomTensor({m}, seed++)).id;
    ir::ValueId out = g.addValue(name).id;
    ir::Node& n = g.addNode("Conv", name + "_node", {in, w, b}, {out});
    n.attrs["pads"] = std::vector<int64_t>(4, k / 2);
    n.attrs["strides"] = std::vector<int64_t>{stride, stride};
    n.attrs["group"] = group;
    return out;
  }
  ir::ValueId clip(const std::string& name, ir::ValueId in) {
    ir::ValueId out = g.addValue(name).id;
    g.addNode("Clip", name + "_node", {in, lo, hi}, {out});
    return out;
  }
  ir::ValueId relu(const std::string& name, ir::ValueId in) {
    ir::ValueId out = g.addValue(name).id;
    g.addNode("Relu", name + "_node", {in}, {out});
    return out;
  }
  ir::ValueId pool(const std::string& op, const std::string& name, ir::ValueId in, int64_t k, int64_t stride,
                   int64_t pad, ir::ValueId* indices = nullptr) {
    ir::ValueId out = g.addValue(name).id;
    std::vector<ir::ValueId> outs{out};
    if (indices != nullptr) outs.push_back(*indices = g.addValue(name + "_indices").id);
    ir::Node& n = g.addNode(op, name + "_node", {in}, outs);
    n.attrs["kernel_shape"] = std::vector<int64_t>{k, k};
    n.attrs["strides"] = std::vector<int64_t>{stride, stride};
    n.attrs["pads"] = std::vector<int64_t>(4, pad);
    if (op == "AveragePool") n.attrs["count_include_pad"] = int64_t{1};
    return out;
  }
  ir::ValueId add(const std::string& name, ir::ValueId a, ir::ValueId b) {
    ir::ValueId out = g.addValue(name).id;
    g.addNode("Add", name + "_node", {a, b}, {out});
    return out;
  }
  // in * HardSigmoid(in; 1/6, 1/2) as opset 13 exports HardSwish (the Mul's operands in either order); the
  // HardSigmoid's output in *sigmoid when asked.
  ir::ValueId hardSwish(const std::string& name, ir::ValueId in, bool sigmoid_first = false,
                        ir::ValueId* sigmoid = nullptr) {
    ir::ValueId h = g.addValue(name + "_h").id, out = g.addValue(name).id;
    ir::Node& n = g.addNode("HardSigmoid", name + "_h_node", {in}, {h});
    n.attrs["alpha"] = 1.0f / 6.0f;
    n.attrs["beta"] = 0.5f;
    g.addNode("Mul", name + "_node", sigmoid_first ? std::vector<ir::ValueId>{h, in} : std::vector<ir::ValueId>{in, h},
              {out});
    if (sigmoid != nullptr) *sigmoid = h;
    return out;
  }
};

struct Net : Builder {
  explicit Net(int64_t batch = 1) {
    const ir::ValueId x = input(batch, 16, 10);
    ir::ValueId e = clip("e", conv("c0", x, 16, 32, 1));
    ir::ValueId p = conv("p", clip("d", conv("dw", e, 32, 32, 3, 32)), 32, 16, 1);
    ir::ValueId out = add("out", p, x);
    ir::ValueId p2 = conv("p2", conv("d2", e, 32, 32, 3, 32, 2), 32, 24, 1);
    ir::ValueId d3 = conv("d3", e, 32, 32, 3, 32);
    ir::ValueId p3 = conv("p3", d3, 32, 16, 1);
    ir::ValueId p4 = conv("p4", conv("d4", e, 32, 32, 3, 32), 32, 72, 1);
    ir::ValueId p5 = conv("p5", conv("d5", e, 32, 32, 3, 32), 32, 8, 3);
    g.outputs() = {out, p2, d3, p3, p4, p5};
    ops::inferShapes(g);
  }
};

// Residual chains, x [N,16,12,12]:
//   a = Relu(Conv3x3(x) 16 -> 32)                                    blocked
//   b = Relu(Conv1x1(a) 32 -> 32); s = Relu(Conv3x3(b) + a)          b, s blocked (the Add and Relu fused into the
//   b2 = Relu(Conv1x1(s) 32 -> 64); s2 = Relu(Conv3x3(b2) 64 -> 32 + s)   Conv: a, s, s2 go blocked together)
//   t = Conv1x1(s2) 32 -> 16, t2 = Conv1x1/2(s2) 32 -> 32, outputs   b2 not (a pointwise expansion writes planes),
//                                                                    t, t2 not (graph outputs; t2 reads s2's blocks
//                                                                    with its stride)
//   z = Relu(Conv3x3/2(s2) 32 -> 32 + Conv1x1/2(s2)); Conv3x3(z), output   the downsample and z blocked (a residual
//                                                                    written by a strided 1x1 from blocks)
//   a2 = Relu(Conv3x3(x)); u = Conv3x3(a2) + a2; v = Conv1x1(u)      none: a2 is also read by ds (12 output
//   ds = Conv3x3(a2) 32 -> 12, a graph output                        channels: no blocked form), so u, which adds it,
//   w = Conv1x1(a2), a graph output                                  stays planes too (and w reads planes)
//   q = Conv3x3(x) 16 -> 16 + x; q2 = Conv1x1(q), a graph output     q not: the residual it adds is a graph input
//   h = Conv1x1(a2) 32 -> 32; k = Conv3x3(h), a graph output          h not: a pointwise layer writes blocks only
//                                                                    from blocks
struct ResNet : Builder {
  explicit ResNet(int64_t batch = 1) {
    const ir::ValueId x = input(batch, 16, 12);
    ir::ValueId a = relu("a", conv("stem", x, 16, 32, 3));
    ir::ValueId s = relu("s", add("s_sum", conv("c", relu("b", conv("pb", a, 32, 32, 1)), 32, 32, 3), a));
    ir::ValueId b2 = relu("b2", conv("pb2", s, 32, 64, 1));
    ir::ValueId s2 = relu("s2", add("s2_sum", s, conv("c2", b2, 64, 32, 3)));  // (the Conv on the Add's right)
    ir::ValueId t = conv("t", s2, 32, 16, 1);
    ir::ValueId t2 = conv("t2", s2, 32, 32, 1, 1, 2);
    ir::ValueId z = relu("z", add("z_sum", conv("cz", s2, 32, 32, 3, 1, 2), conv("dz", s2, 32, 32, 1, 1, 2)));
    ir::ValueId a2 = relu("a2", conv("stem2", x, 16, 32, 3));
    ir::ValueId u = add("u", conv("cu", a2, 32, 32, 3), a2);
    ir::ValueId v = conv("v", u, 32, 16, 1);
    ir::ValueId ds = conv("ds", a2, 32, 12, 3);
    ir::ValueId w = conv("w", a2, 32, 16, 1);
    ir::ValueId q2 = conv("q2", add("q", conv("cq", x, 16, 16, 3), x), 16, 16, 1);
    ir::ValueId k = conv("k", conv("h", a2, 32, 32, 1), 32, 32, 3);
    g.outputs() = {t, t2, v, ds, w, q2, k, conv("oz", z, 32, 32, 3)};
    ops::inferShapes(g);
  }
};

struct IsaGuard {
  const char* isa = kernels::forceKernelIsa("auto");
  IsaGuard() { kernels::forceKernelIsa(isa); }
  ~IsaGuard() { kernels::forceKernelIsa(isa); }
};

// Pools in chains (a pool's output goes blocked as its input does), x [N,16,12,12]:
//   a = Relu(Conv3x3(x) 16 -> 32); m = MaxPool2x2/2(a); b = Conv3x3(m)     a, m not: a also goes to m3, whose
//   m3 = MaxPool3x3(a) (pads 1); r = Relu(m3)                               output a Relu reads
//   g = AveragePool3x3(b) (pads 1, counted); c = Conv1x1(g) 32 -> 16       b, g, c blocked
//   out = GlobalAveragePool(c), a graph output                              (its output: planes)
//   p0 = MaxPool2x2/2(x); q = Conv1x1(p0) 16 -> 16                          p0 not: its input is the graph's
//   a2 = Conv3x3(x); m2, i2 = MaxPool2x2/2(a2) with indices                 a2 not: a pool with indices has no
//                                                                           blocked form
//   e = Relu(Conv3x3(x) 16 -> 32); f = Conv3x3(MaxPool3x3/2(e)) 32 -> 32    e and its pool blocked
//   (pads 1: windows at the edges, MaxPool's padding ignored)
//   e2 = Relu(Conv3x3(x)); z = MaxPool3x3/2(e2) (pads 1, ceil_mode: a     e2, z, h blocked: the pool's output is
//   window past the padding); h = Conv3x3(z) + z; GlobalMaxPool(h)       h's residual
//   e3 = Relu(Conv3x3(x)); n = ai.npuc MaxPool3x3/2(e3) (pad_value 0.5:   e3, n blocked
//   a Pad folded in); Conv3x3(n), a graph output
struct PoolNet : Builder {
  explicit PoolNet(int64_t batch = 1) {
    const ir::ValueId x = input(batch, 16, 12);
    ir::ValueId a = relu("a", conv("ca", x, 16, 32, 3));
    ir::ValueId b = conv("b", pool("MaxPool", "m", a, 2, 2, 0), 32, 32, 3);
    ir::ValueId c = conv("c", pool("AveragePool", "g", b, 3, 1, 1), 32, 16, 1);
    ir::ValueId out = g.addValue("out").id;
    g.addNode("GlobalAveragePool", "out_node", {c}, {out});
    ir::ValueId r = relu("r", pool("MaxPool", "m3", a, 3, 1, 1));
    ir::ValueId q = conv("q", pool("MaxPool", "p0", x, 2, 2, 0), 16, 16, 1);
    ir::ValueId f = conv("f", pool("MaxPool", "pe", relu("e", conv("ce", x, 16, 32, 3)), 3, 2, 1), 32, 32, 3);
    ir::ValueId i2 = ir::kNoValue;
    ir::ValueId m2 = pool("MaxPool", "m2", conv("a2", x, 16, 32, 3), 2, 2, 0, &i2);
    ir::ValueId z = pool("MaxPool", "z", relu("e2", conv("ce2", x, 16, 32, 3)), 3, 2, 1);
    g.node(g.value(z).producer).attrs["ceil_mode"] = ir::Attr(int64_t{1});
    ir::ValueId gm = g.addValue("gm").id;
    g.addNode("GlobalMaxPool", "gm_node", {add("h", conv("ch", z, 32, 32, 3), z)}, {gm});
    ir::ValueId pn = pool("MaxPool", "pn", relu("e3", conv("ce3", x, 16, 32, 3)), 3, 2, 1);
    ir::Node& folded = g.node(g.value(pn).producer);
    folded.domain = "ai.npuc";
    folded.attrs["pad_value"] = ir::Attr(0.5f);
    g.outputs() = {out, r, q, m2, i2, f, gm, conv("cn", pn, 32, 32, 3)};
    ops::inferShapes(g);
  }
};

// MobileNetV3's blocks as opset 13 exports them (HardSwish as x * HardSigmoid(x), fused into the producer):
// x [1,16,12,12]; e = hs(Conv1x1(x) 16 -> 32)                 e not: a pointwise expansion writes planes
//   d = hs(dw3x3(e)) (HardSigmoid first in the Mul);          d blocked: the blocks pass through the fused pair
//   q = hs(Conv3x3(d) 32 -> 32); Conv3x3(q) 32 -> 32, output  q blocked
//   d2 = hs(dw3x3(e)), its HardSigmoid a graph output;        d2 not: the pair runs apart (the dw writes planes)
//   Conv1x1(d2) 32 -> 16, an output
struct HardSwishNet : Builder {
  explicit HardSwishNet(int64_t batch = 1) {
    const ir::ValueId x = input(batch, 16, 12);
    ir::ValueId e = hardSwish("e", conv("c0", x, 16, 32, 1));
    ir::ValueId d = hardSwish("d", conv("dw", e, 32, 32, 3, 32), true);
    ir::ValueId q = hardSwish("q", conv("cq", d, 32, 32, 3));
    ir::ValueId h2 = ir::kNoValue;
    ir::ValueId d2 = hardSwish("d2", conv("dw2", e, 32, 32, 3, 32), false, &h2);
    g.outputs() = {conv("out", q, 32, 32, 3), h2, conv("p2", d2, 32, 16, 1)};
    ops::inferShapes(g);
  }
};

// Concats along the channels pass blocks (each input one slab of the output in either layout), x [N,16,28,28]:
//   a = Relu(Conv3x3(x) 16 -> 32); s = Relu(Conv1x1(a) 32 -> 16)         a, s blocked
//   c = Concat(Relu(Conv1x1(s) 16 -> 32), Relu(Conv3x3(s) 16 -> 32))      both branches and c blocked (a Fire module:
//   m = MaxPool3x3/2(c) (pads 1); Conv3x3(Conv1x1(m) 64 -> 16), output    the expansion writes blocks over 28x28), m
//                                                                        and the squeeze after it too
//   f1 = Relu(Conv3x3(s) 16 -> 16), also read by Conv1x1(f1), an output  f1, f2, c2 blocked (f1 copied by the Concat,
//   c2 = Concat(f1, Conv3x3(a) 32 -> 32), axis -3; Conv3x3(c2), output   not placed in it: it has another reader)
//   c3 = Concat(x, Conv1x1(s) 16 -> 32); Conv3x3(c3), an output          neither: x is the graph's input
//   c4 = Concat(Conv3x3(s), Conv3x3(s)) 16 + 16, a graph output          none: c4 is an output
//   c5 = Concat(Conv3x3(s), Conv3x3(s)) along the rows (axis 2);          none: a Concat along the rows interleaves
//   Conv3x3(c5), an output                                               its inputs' blocks
//   e6 = Relu(Conv3x3(s)); c6 = Concat(e6, e6);                           e6, c6, u6 blocked (e6 read twice: copied,
//   u6 = Relu(Conv3x3(c6) 32 -> 32 + c6); Conv3x3(u6), an output          not placed; c6 also the sum's residual)
struct ConcatNet : Builder {
  ir::ValueId concat(const std::string& name, std::vector<ir::ValueId> in, int64_t axis = 1) {
    ir::ValueId out = g.addValue(name).id;
    g.addNode("Concat", name + "_node", std::move(in), {out}).attrs["axis"] = axis;
    return out;
  }
  explicit ConcatNet(int64_t batch = 1) {
    const ir::ValueId x = input(batch, 16, 28);
    ir::ValueId a = relu("a", conv("ca", x, 16, 32, 3));
    ir::ValueId s = relu("s", conv("sq", a, 32, 16, 1));
    ir::ValueId c = concat("c", {relu("e1", conv("ce1", s, 16, 32, 1)), relu("e3", conv("ce3", s, 16, 32, 3))});
    ir::ValueId o1 = conv("o1", conv("sq2", pool("MaxPool", "m", c, 3, 2, 1), 64, 16, 1), 16, 16, 3);
    ir::ValueId f1 = relu("f1", conv("cf1", s, 16, 16, 3));
    ir::ValueId o2 = conv("o2", concat("c2", {f1, conv("f2", a, 32, 32, 3)}, -3), 48, 32, 3);
    ir::ValueId o3 = conv("o3", f1, 16, 16, 1);
    ir::ValueId o4 = conv("o4", concat("c3", {x, conv("e1b", s, 16, 32, 1)}), 48, 32, 3);
    ir::ValueId c4 = concat("c4", {conv("g1", s, 16, 16, 3), conv("g2", s, 16, 16, 3)});
    ir::ValueId o5 = conv("o5", concat("c5", {conv("h1", s, 16, 16, 3), conv("h2", s, 16, 16, 3)}, 2), 16, 16, 3);
    ir::ValueId e6 = relu("e6", conv("ce6", s, 16, 16, 3));
    ir::ValueId c6 = concat("c6", {e6, e6});
    ir::ValueId o6 = conv("o6", relu("u6", add("u6_sum", conv("cu6", c6, 32, 32, 3), c6)), 32, 32, 3);
    g.outputs() = {o1, o2, o3, o4, c4, o5, o6};
    ops::inferShapes(g);
  }
};

// The values the AVX2 table blocks in each graph (above); other tables: none.
size_t expectedBlocked(size_t on_avx2) {
  return std::string(kernels::sgemmVariant()) == "avx2_fma" ? on_avx2 : 0;
}

template <class G>
void expectSameBitsAsPlanes(int64_t channels, int64_t side, size_t blocked_on_avx2) {
  IsaGuard guard;
  for (const int64_t batch : {1, 2}) {
    G net(batch);
    Tensor x = randomTensor({batch, channels, side, side}, 99);
    x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    x.data<float>()[40] = -0.0f;
    EngineOptions planes;
    planes.block_channels = false;
    const std::vector<Tensor> want = Engine(net.g, planes).run({x});
    EXPECT_EQ(Engine(net.g, planes).blockedValues(), 0u);
    for (const char* isa : {"avx2", "auto", "portable"}) {
      kernels::forceKernelIsa(isa);
      for (int threads : {1, 2, 3}) {
        EngineOptions o;
        o.threads = threads;
        Engine e(net.g, o);
        EXPECT_EQ(e.blockedValues(), expectedBlocked(blocked_on_avx2)) << isa;
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

TEST(ChannelBlocking, SameBitsAsPlanes) { expectSameBitsAsPlanes<Net>(16, 10, 3); }

TEST(ChannelBlocking, ResidualChainsSameBitsAsPlanes) { expectSameBitsAsPlanes<ResNet>(16, 12, 6); }

TEST(ChannelBlocking, PoolsSameBitsAsPlanes) { expectSameBitsAsPlanes<PoolNet>(16, 12, 10); }

TEST(ChannelBlocking, ThroughConcatsSameBitsAsPlanes) { expectSameBitsAsPlanes<ConcatNet>(16, 28, 13); }

TEST(ChannelBlocking, ThroughFusedHardSwishSameBitsAsPlanes) {
  EXPECT_EQ(Engine(HardSwishNet().g).fusedSigmoidMuls(), 3u);  // e, d, q (d2's HardSigmoid is an output)
  expectSameBitsAsPlanes<HardSwishNet>(16, 12, 2);
}

TEST(ChannelBlocking, CallbacksSeePlanes) {
  IsaGuard guard;
  kernels::forceKernelIsa("avx2");
  Net net;
  const Tensor x = randomTensor({1, 16, 10, 10}, 7);
  EngineOptions planes;
  planes.block_channels = false;
  std::map<std::string, std::vector<uint32_t>> want, got;
  Engine(net.g, planes).run({x}, test::keepOutputBits(want));
  Engine blocked(net.g);
  if (std::string(kernels::sgemmVariant()) == "avx2_fma") {
    EXPECT_EQ(blocked.blockedValues(), 3u);  // (so that the callback run below is one the plan would block)
  }
  blocked.run({x}, test::keepOutputBits(got));
  test::expectSameNodeBits(got, want);
  expectSameBits(blocked.run({x}), Engine(net.g, planes).run({x}), "after a run with a callback");
}

}  // namespace
}  // namespace npuc::engine
