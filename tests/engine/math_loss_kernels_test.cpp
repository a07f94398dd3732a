// Engine kernels of the ops beyond a CNN's: Einsum's general form, Det, the losses, MeanVarianceNormalization, Unique,
// ReverseSequence and MaxPool over narrow integers. The ONNX test data checks the common cases (the conformance
// allowlist); these check the edges it leaves out, against hand-computed values.
#include "engine_test_util.hpp"

#include <cmath>

namespace npuc::engine::test {
namespace {

ir::Attr str(const char* s) { return ir::Attr(std::string(s)); }

TEST(Einsum, ImplicitOutputTraceAndBroadcastEllipsis) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  // No "->": the letters used once, alphabetically (a matrix product).
  EXPECT_EQ(vals<float>(runOp("Einsum", {a, b}, {{"equation", str("ij,jk")}})[0]), (std::vector<float>{4, 5, 10, 11}));
  // A label twice in one term: the diagonal, summed (the trace).
  const Tensor m = f32({2, 2}, {1, 2, 3, 4});
  std::vector<Tensor> tr = runOp("Einsum", {m}, {{"equation", str("ii")}});
  EXPECT_EQ(tr[0].rank(), 0);
  EXPECT_EQ(vals<float>(tr[0]), std::vector<float>{5});
  // An ellipsis covering one dim of a and none of b: b broadcasts along it.
  const Tensor v = f32({3}, {1, 1, 2});
  EXPECT_EQ(vals<float>(runOp("Einsum", {a, v}, {{"equation", str("...i,i->...")}})[0]), (std::vector<float>{9, 21}));
  expectError([&] { runOp("Einsum", {a, b}, {{"equation", str("ij,ik->jk")}}); }, ErrorCode::kInvalidInput);  // i: 2 vs 3
  expectError([&] { runOp("Einsum", {a}, {{"equation", str("i1->i")}}); }, ErrorCode::kInvalidInput);
}

TEST(Det, SingularPivotedAndBatched) {
  const Tensor x = f32({3, 2, 2}, {1, 2, 2, 4,  /* singular */ 0, 1, 1, 0, /* a row swap: −1 */ 2, 0, 0, 3});
  EXPECT_EQ(vals<float>(runOp("Det", {x})[0]), (std::vector<float>{0, -1, 6}));
  expectError([&] { runOp("Det", {f32({2, 3}, {1, 2, 3, 4, 5, 6})}); }, ErrorCode::kInvalidInput);
}

TEST(Losses, IgnoredTargetsAndTargetsOutOfRange) {
  const Tensor x = f32({3, 2}, {-1, -2, -3, -4, -5, -6});  // log-probabilities, N = 3, C = 2
  const Tensor t = i64({3}, {0, 1, -1});
  // ignore_index -1: the third sample counts neither in the sum nor in the mean's divisor.
  EXPECT_FLOAT_EQ(vals<float>(runOp("NegativeLogLikelihoodLoss", {x, t}, {{"ignore_index", int64_t{-1}}})[0])[0], 2.5f);
  EXPECT_EQ(vals<float>(runOp("NegativeLogLikelihoodLoss", {x, t}, {{"ignore_index", int64_t{-1}}, {"reduction", str("none")}})[0]),
            (std::vector<float>{1, 4, 0}));
  // Without ignore_index, -1 is no class: an error naming it, never a read outside the scores.
  expectError([&] { runOp("NegativeLogLikelihoodLoss", {x, t}); }, ErrorCode::kInvalidInput);
  // Weighted mean: the sum over the counted targets' weights.
  const Tensor w = f32({2}, {1, 3});
  EXPECT_FLOAT_EQ(vals<float>(runOp("NegativeLogLikelihoodLoss", {x, i64({3}, {0, 1, 1}), w})[0])[0], (1 + 12 + 18) / 7.0f);
  // SoftmaxCrossEntropyLoss of equal scores: log(C) each, and log_prob = −log(C).
  std::vector<Tensor> sce = runOp("SoftmaxCrossEntropyLoss", {f32({1, 4}, {7, 7, 7, 7}), i64({1}, {2})}, {}, 2);
  EXPECT_NEAR(vals<float>(sce[0])[0], std::log(4.0f), 1e-6);
  EXPECT_NEAR(vals<float>(sce[1])[3], -std::log(4.0f), 1e-6);
}

TEST(MeanVarianceNormalization, ConstantPlanesGiveZeros) {
  std::vector<Tensor> y = runOp("MeanVarianceNormalization", {f32({1, 2, 1, 2}, {3, 3, 1, 5})});
  EXPECT_EQ(vals<float>(y[0])[0], 0.0f);  // channel 0: constant (std 0: divided by 1e-9, not by 0)
  EXPECT_NEAR(vals<float>(y[0])[2], -1.0f, 1e-6);
  EXPECT_NEAR(vals<float>(y[0])[3], 1.0f, 1e-6);
}

TEST(Unique, NaNsAreOneValueAndSortLast) {
  const float nan = std::nanf("");
  std::vector<Tensor> u = runOp("Unique", {f32({4}, {nan, 1, nan, 0})}, {}, 4);
  ASSERT_EQ(u[0].numel(), 3);
  EXPECT_EQ(vals<float>(u[0])[0], 0.0f);
  EXPECT_TRUE(std::isnan(vals<float>(u[0])[2]));
  EXPECT_EQ(vals<int64_t>(u[1]), (std::vector<int64_t>{3, 1, 0}));
  EXPECT_EQ(vals<int64_t>(u[2]), (std::vector<int64_t>{2, 1, 2, 0}));
  EXPECT_EQ(vals<int64_t>(u[3]), (std::vector<int64_t>{1, 1, 2}));
  std::vector<Tensor> in_order = runOp("Unique", {f32({4}, {nan, 1, nan, 0})}, {{"sorted", int64_t{0}}}, 4);
  EXPECT_EQ(vals<int64_t>(in_order[1]), (std::vector<int64_t>{0, 1, 3}));
}

TEST(ReverseSequence, LengthsBeyondTheSequenceAreErrors) {
  const Tensor x = iota({3, 2});  // time 3, batch 2
  EXPECT_EQ(vals<float>(runOp("ReverseSequence", {x, i64({2}, {3, 1})})[0]), (std::vector<float>{4, 1, 2, 3, 0, 5}));
  expectError([&] { runOp("ReverseSequence", {x, i64({2}, {4, 1})}); }, ErrorCode::kInvalidInput);
}

TEST(MaxPool, Uint16ValuesAndColumnMajorIndices) {
  const Tensor x = Tensor::fromVector<uint16_t>({1, 1, 2, 2}, {1, 60000, 65535, 7});
  std::vector<Tensor> y = runOp("MaxPool", {x}, {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(vals<uint16_t>(y[0]), std::vector<uint16_t>{65535});
  // Indices in column-major order: element (h 1, w 0) of a 2x2 plane is 1, not 2.
  std::vector<Tensor> yi = runOp("MaxPool", {iota({1, 1, 2, 2}) /* max at (1, 1) */, },
                                 {{"kernel_shape", std::vector<int64_t>{2, 1}}, {"storage_order", int64_t{1}}}, 2);
  EXPECT_EQ(vals<int64_t>(yi[1]), (std::vector<int64_t>{1, 3}));
}

}  // namespace
}  // namespace npuc::engine::test

namespace npuc::engine::test {
namespace {

// Add / Sub / Mul / Div of a tensor and one value per row of its trailing dims (an SE gate's [N, C, H, W] x [N, C, 1, 1],
// either side, a lower rank broadcast too): the engine's row-wise path gives, element for element, a op b in float —
// the oracle computed here —, including NaN and signed zeros.
TEST(ElementWise, RowBroadcastsAreTheElementwiseOps) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  auto random = [&](Shape s) {
    Tensor t(DType::kF32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    return t;
  };
  struct Case {
    Shape big, small;
  };
  for (const Case& c : {Case{{2, 3, 5, 7}, {2, 3, 1, 1}}, Case{{1, 16, 9, 9}, {1, 16, 1, 1}}, Case{{1, 6, 10}, {6, 1}}, Case{{3, 8}, {3, 1}}})
    for (const char* op : {"Add", "Sub", "Mul", "Div"})
      for (bool small_first : {false, true}) {
        Tensor big = random(c.big), small = random(c.small);
        small.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
        big.data<float>()[1] = -0.0f;
        const Tensor y = runOp(op, small_first ? std::vector<Tensor>{small, big} : std::vector<Tensor>{big, small})[0];
        ASSERT_EQ(y.shape(), big.shape());
        const int64_t len = big.numel() / small.numel();
        for (int64_t i = 0; i < big.numel(); ++i) {
          const float a = big.data<float>()[i], b = small.data<float>()[i / len];
          const float x = small_first ? b : a, z = small_first ? a : b;
          const std::string o = op;
          const float want = o == "Add" ? x + z : o == "Sub" ? x - z : o == "Mul" ? x * z : x / z;
          const float got = y.data<float>()[i];
          EXPECT_TRUE(std::memcmp(&got, &want, 4) == 0 || (std::isnan(got) && std::isnan(want))) << op << " " << i;
        }
      }
}

}  // namespace
}  // namespace npuc::engine::test
