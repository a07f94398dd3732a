// Models with recurrent layers (RNN, GRU, LSTM) on the reference engine against PyTorch's own outputs: the cases the
// ONNX test data does not cover (bidirectional, stacked, batch-first, a ReLU RNN, initial states), exported by
// tests/data/recurrent/generate.py. Also: the bits do not depend on the thread count, each model's generic package
// (recurrent layers) computes the engine's bits in --exact and fast mode, and a bad sequence length is an error
// naming it.
#include "engine/engine.hpp"
#include "ir/graph.hpp"
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"
#include "ops/registry.hpp"
#include "package/package.hpp"

#include "scratch_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>

using namespace npuc;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(NPUC_SOURCE_DIR) / "tests/data/recurrent";

std::map<std::string, Tensor> inputsOf(const std::string& name) {
  std::map<std::string, Tensor> in{{"x", readNpyFile(kDir / (name + ".in.npy"))}};
  for (const char* s : {"h0", "c0"})
    if (fs::exists(kDir / (name + "." + s + ".npy"))) in[s] = readNpyFile(kDir / (name + "." + s + ".npy"));
  return in;
}

}  // namespace

class RecurrentModels : public ::testing::TestWithParam<std::string> {};

TEST_P(RecurrentModels, EqualPyTorch) {
  const std::string name = GetParam();
  Model m = Model::load(kDir / (name + ".onnx"));
  const auto in = inputsOf(name);
  std::vector<Tensor> got = Session(m).run(in);
  for (size_t k = 0; k < got.size(); ++k) {
    Tensor want = readNpyFile(kDir / fmt::format("{}.out{}.npy", name, k));
    ASSERT_EQ(got[k].shape(), want.shape()) << name << " output " << k;
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double w = want.data<float>()[i], g = got[k].data<float>()[i];
      worst = std::max(worst, std::fabs(g - w) / std::max(1.0, std::fabs(w)));
    }
    EXPECT_LT(worst, 1e-5) << name << " output " << k;
  }
  std::vector<Tensor> two = Session(m, 2).run(in);
  for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(two[k].sameBits(got[k])) << name << " output " << k << " at 2 threads";
  TranslateOptions o;
  o.prefix = name;
  o.onnx = kDir / (name + ".onnx");
  o.target = "generic";
  o.out_root = test::scratchDir("recurrent_" + name);
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok) << name;
  for (RuntimeOptions opts : {RuntimeOptions{1, true}, RuntimeOptions{2, false}}) {
    Runtime rt(r.dir, opts);
    for (const auto& [input, t] : in) rt.setInput(input, t);
    rt.run();
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(rt.output(m.outputs()[k].name).sameBits(got[k])) << name << " package output " << k << (opts.exact ? " exact" : " fast");
  }
}

// generic-int8 (the model set's rule: recurrent layers translate for it): LSTM and GRU layers in their int8 form (x int8
// codes, W and R int8 per row, the gates' products integer sums: docs/numerics.md "Recurrent layers in int8"), the ReLU
// RNN in float between dequantize and quantize layers; the package's bits are the engine's on the QDQ model's integer
// layers (ai.npuc QRecurrent), fast and --exact alike, and each output follows the float model.
TEST_P(RecurrentModels, TranslatesForGenericInt8) {
  const std::string name = GetParam();
  Model m = Model::load(kDir / (name + ".onnx"));
  const auto in = inputsOf(name);
  TranslateOptions o;
  o.prefix = name + "_int8";
  o.onnx = kDir / (name + ".onnx");
  o.target = "generic-int8";
  o.out_root = test::scratchDir("recurrent_int8_" + name);
  for (const auto& [input, t] : in) o.calibration[input] = {t};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok) << name;
  const std::vector<Tensor> ref = Session(m).run(in);
  QuantizeOptions q;
  q.calibration = o.calibration;
  q.integer_layers = true;
  const std::vector<Tensor> engine = Session(Model::load(o.onnx).optimized().quantizedQdq(q)).run(in);
  const package::Package pkg = package::readPackage(r.dir);
  int int8_recurrent = 0;
  for (const auto* stream : {&pkg.mac, &pkg.vec})
    for (const package::Descriptor& d : *stream) int8_recurrent += d.kind == package::LayerKind::kRecurrent && d.in(0).type == DType::kI8;
  EXPECT_EQ(int8_recurrent > 0, name.rfind("rnn", 0) != 0) << name << ": LSTM and GRU layers in their int8 form, the RNN in float";
  Runtime fast(r.dir, RuntimeOptions{2, false}), exact(r.dir, RuntimeOptions{1, true});
  for (Runtime* rt : {&fast, &exact}) {
    for (const auto& [input, t] : in) rt->setInput(input, t);
    rt->run();
  }
  for (size_t k = 0; k < ref.size(); ++k) {
    const Tensor a = fast.outputFloat(m.outputs()[k].name), b = exact.outputFloat(m.outputs()[k].name);
    EXPECT_TRUE(a.sameBits(b)) << name << " output " << k;
    EXPECT_TRUE(a.sameBits(engine[k])) << name << " output " << k << ": the package is not the engine's integer layers";
    const auto x = a.toDouble(), y = ref[k].toDouble();
    double dot = 0, nx = 0, ny = 0;
    for (size_t i = 0; i < x.size(); ++i) dot += x[i] * y[i], nx += x[i] * x[i], ny += y[i] * y[i];
    EXPECT_GT(dot / std::sqrt(nx * ny), 0.99) << name << " output " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, RecurrentModels,
                         ::testing::Values("lstm_bidir", "lstm2_bidir", "lstm_stacked_batch_first", "gru_bidir", "rnn_relu_bidir"));

// A model with state (lstm_stream: one frame in, the LSTM's h and c as inputs and outputs) runs frame after frame on one
// Runtime, each frame's states fed to the next: the 12 frames give PyTorch's outputs for the whole sequence within
// 1e-5, and the package's bits are the engine's frame by frame, in --exact and fast mode.
TEST(RecurrentModels, AStatefulModelRunsFrameAfterFrame) {
  Model m = Model::load(kDir / "lstm_stream.onnx");
  TranslateOptions o;
  o.prefix = "lstm_stream";
  o.onnx = kDir / "lstm_stream.onnx";
  o.target = "generic";
  o.out_root = test::scratchDir("recurrent_stream");
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  const Tensor frames = readNpyFile(kDir / "lstm_stream.frames.npy"), want_y = readNpyFile(kDir / "lstm_stream.y.npy");
  const int64_t n = frames.shape()[0], fsize = frames.numel() / n, ysize = want_y.numel() / n;
  Session session(m, 1);
  for (RuntimeOptions opts : {RuntimeOptions{1, true}, RuntimeOptions{2, false}}) {
    Runtime rt(r.dir, opts);
    Tensor h(DType::kF32, {2, 1, 8}), c(DType::kF32, {2, 1, 8});
    std::vector<Tensor> ref{Tensor(), h, c};
    double worst = 0;
    for (int64_t t = 0; t < n; ++t) {
      Tensor x(DType::kF32, {1, 1, fsize});
      std::copy_n(frames.data<float>() + t * fsize, fsize, x.data<float>());
      rt.setInput("x", x);
      rt.setInput("h0", rt.output("h").defined() && t ? rt.output("h") : h);
      rt.setInput("c0", rt.output("c").defined() && t ? rt.output("c") : c);
      rt.run();
      ref = session.run({x, ref[1], ref[2]});  // the engine, frame by frame from its own states
      for (const char* out : {"y", "h", "c"}) {
        const size_t k = out[0] == 'y' ? 0 : out[0] == 'h' ? 1 : 2;
        EXPECT_TRUE(rt.output(out).sameBits(ref[k])) << "frame " << t << " output " << out << (opts.exact ? " exact" : " fast");
      }
      const Tensor y = rt.output("y");
      for (int64_t i = 0; i < ysize; ++i)
        worst = std::max(worst, std::fabs(double(y.data<float>()[i]) - want_y.data<float>()[t * ysize + i]));
    }
    EXPECT_LT(worst, 1e-5);
    for (const char* s : {"h", "c"}) {
      const Tensor got = rt.output(s), want = readNpyFile(kDir / fmt::format("lstm_stream.{}.npy", s));
      for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5) << s;
    }
  }
}

// sequence_lens: a sequence of length L gives the outputs of its first L steps run alone (forward, and reverse from
// step L-1), zeros in Y past L; a length beyond the sequence is an error naming it, not a read past the end.
namespace {

std::vector<Tensor> runRnn(const std::string& direction, const Tensor& x, const Tensor* lens) {
  ir::Graph g;
  g.opset = 14;
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  std::vector<ir::ValueId> ins{g.addValue("x", ir::makeType(DType::kF32, x.shape())).id};
  Tensor w(DType::kF32, {dirs, 3 * 4, 3}), r(DType::kF32, {dirs, 3 * 4, 4});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.05f * static_cast<float>((i * 7) % 11) - 0.25f;
  for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = 0.04f * static_cast<float>((i * 5) % 13) - 0.2f;
  ins.push_back(g.addConstant("w", w).id);
  ins.push_back(g.addConstant("r", r).id);
  ins.push_back(ir::kNoValue);
  std::vector<Tensor> feed{x};
  if (lens) {
    ins.push_back(g.addValue("lens", ir::makeType(DType::kI32, lens->shape())).id);
    feed.push_back(*lens);
  }
  g.inputs().push_back(ins[0]);
  if (lens) g.inputs().push_back(ins.back());
  ir::ValueId y = g.addValue("y").id, h = g.addValue("h").id;
  ir::Node& n = g.addNode("GRU", "gru", ins, {y, h});
  n.attrs["hidden_size"] = ir::Attr(int64_t{4});
  n.attrs["direction"] = ir::Attr(direction);
  g.outputs() = {y, h};
  ops::inferShapes(g);
  return engine::Engine(g).run(feed);
}

Tensor steps(const Tensor& x, int64_t from, int64_t count) {  // x [seq, 1, 3]: steps [from, from + count)
  Tensor t(DType::kF32, {count, 1, 3});
  std::copy_n(x.data<float>() + from * 3, count * 3, t.data<float>());
  return t;
}

}  // namespace

TEST(RecurrentLengths, AShortSequenceIsItsFirstStepsRunAlone) {
  Tensor x(DType::kF32, {5, 1, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.7f * static_cast<float>(i));
  Tensor lens = Tensor::fromVector<int32_t>({1}, {3});
  for (const char* dir : {"forward", "reverse"}) {
    std::vector<Tensor> got = runRnn(dir, x, &lens), alone = runRnn(dir, steps(x, 0, 3), nullptr);
    for (int64_t i = 0; i < 3 * 4; ++i) EXPECT_EQ(got[0].data<float>()[i], alone[0].data<float>()[i]) << dir << " Y " << i;
    for (int64_t i = 3 * 4; i < 5 * 4; ++i) EXPECT_EQ(got[0].data<float>()[i], 0.0f) << dir << " Y past the length " << i;
    EXPECT_TRUE(got[1].sameBits(alone[1])) << dir << " Y_h";
  }
  Tensor bad = Tensor::fromVector<int32_t>({1}, {6});
  try {
    runRnn("forward", x, &bad);
    FAIL() << "a sequence length of 6 ran on a sequence of 5";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence_lens[0] = 6 is outside [0, 5]"), std::string::npos) << e.what();
  }
}
