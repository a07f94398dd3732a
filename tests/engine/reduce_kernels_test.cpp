// Tests of the reduction kernels (engine/ops_reduce.cpp): hand-computed values, empty sets, integer and
// float16 inputs, the accumulation order, ArgMax/ArgMin.
#include "engine_test_util.hpp"

#include "support/fp16.hpp"

#include <cmath>
#include <limits>
#include <random>

namespace npuc::engine::test {
namespace {

using V = std::vector<int64_t>;
using F = std::vector<float>;
using A = std::map<std::string, ir::Attr>;

const Tensor kX = f32({2, 3}, {1, -2, 3, 4, 5, -6});

float one(const Tensor& t) {
  EXPECT_EQ(t.numel(), 1);
  return t.data<float>()[0];
}

TEST(ReduceKernels, SumAxesInputAndKeepdims) {
  auto y = runOp("ReduceSum", {kX, i64v({1})}, {{"keepdims", int64_t{0}}});
  EXPECT_EQ(y[0].shape(), (Shape{2}));
  EXPECT_EQ(vals<float>(y[0]), (F{2, 3}));
  auto all = runOp("ReduceSum", {kX});
  EXPECT_EQ(all[0].shape(), (Shape{1, 1}));
  EXPECT_EQ(one(all[0]), 5.0f);
  auto noop = runOp("ReduceSum", {kX, Tensor()}, {{"noop_with_empty_axes", int64_t{1}}});
  EXPECT_EQ(noop[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<float>(noop[0]), vals<float>(kX));
  auto v11 = runOp("ReduceSum", {kX}, {{"axes", V{0}}}, 1, 11);
  EXPECT_EQ(vals<float>(v11[0]), (F{5, 3, -3}));
}

TEST(ReduceKernels, AllOpsHandComputed) {
  A ax0{{"axes", V{-2}}, {"keepdims", int64_t{0}}};
  EXPECT_EQ(vals<float>(runOp("ReduceMean", {kX}, ax0)[0]), (F{2.5f, 1.5f, -1.5f}));
  EXPECT_EQ(vals<float>(runOp("ReduceMax", {kX}, ax0)[0]), (F{4, 5, 3}));
  EXPECT_EQ(vals<float>(runOp("ReduceMin", {kX}, ax0)[0]), (F{1, -2, -6}));
  EXPECT_EQ(vals<float>(runOp("ReduceProd", {kX}, ax0)[0]), (F{4, -10, -18}));
  EXPECT_EQ(vals<float>(runOp("ReduceL1", {kX}, ax0)[0]), (F{5, 7, 9}));
  EXPECT_EQ(vals<float>(runOp("ReduceSumSquare", {kX}, ax0)[0]), (F{17, 29, 45}));
  auto l2 = vals<float>(runOp("ReduceL2", {kX}, ax0)[0]);
  EXPECT_FLOAT_EQ(l2[0], std::sqrt(17.0f));
  EXPECT_FLOAT_EQ(l2[2], std::sqrt(45.0f));
  auto ls = vals<float>(runOp("ReduceLogSum", {f32({2}, {1, 2})})[0]);
  EXPECT_FLOAT_EQ(ls[0], std::log(3.0f));
  auto lse = vals<float>(runOp("ReduceLogSumExp", {f32({2}, {1000, 1000})})[0]);
  EXPECT_FLOAT_EQ(lse[0], 1000 + std::log(2.0f));  // no overflow: the maximum is subtracted first
}

TEST(ReduceKernels, EmptySetIdentities) {
  Tensor e(DType::kF32, {2, 0, 3});
  A ax{{"axes", V{1}}, {"keepdims", int64_t{1}}};
  auto mx = vals<float>(runOp("ReduceMax", {e}, ax)[0]);
  ASSERT_EQ(mx.size(), 6u);
  EXPECT_EQ(mx[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(vals<float>(runOp("ReduceMin", {e}, ax)[0])[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(vals<float>(runOp("ReduceProd", {e}, ax)[0])[0], 1.0f);
  EXPECT_EQ(vals<float>(runOp("ReduceSum", {e, i64v({1})})[0])[0], 0.0f);
  EXPECT_EQ(vals<float>(runOp("ReduceLogSumExp", {e}, ax)[0])[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(vals<float>(runOp("ReduceMean", {e}, ax)[0])[0]));
}

TEST(ReduceKernels, NaNPropagates) {
  auto y = runOp("ReduceMax", {f32({3}, {1, NAN, 2})});
  EXPECT_TRUE(std::isnan(one(y[0])));
}

TEST(ReduceKernels, Integers) {
  Tensor xi = Tensor::fromVector<int32_t>({2, 2}, {std::numeric_limits<int32_t>::max(), 1, 7, -2});
  auto s = runOp("ReduceSum", {xi, i64v({0})}, {{"keepdims", int64_t{0}}});
  // int32 sums wrap modulo 2^32 (no UB)
  EXPECT_EQ(vals<int32_t>(s[0]), (std::vector<int32_t>{std::numeric_limits<int32_t>::min() + 6, -1}));
  auto m = runOp("ReduceMean", {Tensor::fromVector<int64_t>({3}, {1, 2, 4})});
  EXPECT_EQ(vals<int64_t>(m[0]), (V{2}));
  auto mx = runOp("ReduceMax", {Tensor::fromVector<int64_t>({3}, {-5, -9, -7})});
  EXPECT_EQ(vals<int64_t>(mx[0]), (V{-5}));
  auto p = runOp("ReduceProd", {Tensor::fromVector<int64_t>({3}, {-3, 4, 5})});
  EXPECT_EQ(vals<int64_t>(p[0]), (V{-60}));
}

TEST(ReduceKernels, Float16WidensOnce) {
  Tensor h(DType::kF16, {4});
  float in[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  double acc = 0;
  for (int i = 0; i < 4; ++i) {
    static_cast<uint16_t*>(h.raw())[i] = floatToHalf(in[i]);
    acc += halfToFloat(floatToHalf(in[i]));
  }
  auto y = runOp("ReduceSum", {h});
  ASSERT_EQ(y[0].dtype(), DType::kF16);
  EXPECT_EQ(static_cast<const uint16_t*>(y[0].raw())[0], floatToHalf(static_cast<float>(acc)));
}

TEST(ReduceKernels, AscendingOrderDoubleAccumulation) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1e4f, 1e4f);
  std::vector<float> v(1000);
  for (auto& x : v) x = d(rng);
  // reduce axis 0 of a 1000x1 tensor and the whole tensor: same ascending order, same bits
  double acc = 0;
  for (float x : v) acc += x;
  auto y = runOp("ReduceSum", {f32({1000, 1}, v), i64v({0})});
  EXPECT_EQ(one(y[0]), static_cast<float>(acc));
  auto z = runOp("ReduceSum", {f32({1000}, v)});
  EXPECT_EQ(one(z[0]), static_cast<float>(acc));
}

TEST(ReduceKernels, ArgMaxArgMin) {
  Tensor x = f32({2, 3}, {1, 5, 5, 7, 2, 7});
  EXPECT_EQ(vals<int64_t>(runOp("ArgMax", {x}, {{"axis", int64_t{1}}})[0]), (V{1, 0}));
  auto last = runOp("ArgMax", {x}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(last[0].shape(), (Shape{2}));
  EXPECT_EQ(vals<int64_t>(last[0]), (V{2, 2}));
  auto mn = runOp("ArgMin", {x}, {{"axis", int64_t{0}}});
  EXPECT_EQ(mn[0].shape(), (Shape{1, 3}));
  EXPECT_EQ(vals<int64_t>(mn[0]), (V{0, 1, 0}));
  EXPECT_EQ(vals<int64_t>(runOp("ArgMax", {f32({3}, {1, NAN, 9})})[0]), (V{1}));
  Tensor xi = Tensor::fromVector<int32_t>({4}, {3, -1, 8, -1});
  EXPECT_EQ(vals<int64_t>(runOp("ArgMin", {xi}, {{"select_last_index", int64_t{1}}})[0]), (V{3}));
  expectError([&] { runOp("ArgMax", {x}, {{"axis", int64_t{2}}}); }, ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace npuc::engine::test
