// QuantizeLinear / DequantizeLinear on the engine against ONNX's formulas, values chosen where the rounding rule,
// the saturation, the default uint8 type and the per-axis scales decide the answer.
#include "engine_test_util.hpp"

namespace npuc::engine::test {
namespace {

Tensor i8(Shape s, std::vector<int8_t> v) { return Tensor::fromVector<int8_t>(std::move(s), v); }
Tensor scalar(float v) { return Tensor::fromVector<float>(Shape{}, {v}); }

TEST(QuantizeLinear, RoundsHalfToEvenAddsTheZeroPointAndSaturates) {
  Tensor x = f32({8}, {2.5f, 3.5f, -2.5f, -3.5f, 0.49f, 1000.0f, -1000.0f, 1.0f});
  auto y = runOp("QuantizeLinear", {x, scalar(1.0f), i8({}, {3})});
  ASSERT_EQ(y[0].dtype(), DType::kI8);
  // rint(x) + 3, clamped to [-128, 127]: 2.5 -> 2, 3.5 -> 4, -2.5 -> -2, -3.5 -> -4 (half to even)
  EXPECT_EQ(vals<int8_t>(y[0]), (std::vector<int8_t>{5, 7, 1, -1, 3, 127, -128, 4}));
}

TEST(QuantizeLinear, DefaultsToUint8WithZeroPointZero) {
  auto y = runOp("QuantizeLinear", {f32({4}, {-1.0f, 0.6f, 100.0f, 600.0f}), scalar(2.0f)});
  ASSERT_EQ(y[0].dtype(), DType::kU8);
  EXPECT_EQ(vals<uint8_t>(y[0]), (std::vector<uint8_t>{0, 0, 50, 255}));  // -0.5 -> -0 -> 0; 0.3 -> 0
}

TEST(QuantizeLinear, PerAxisScalesFollowTheAxis) {
  // [2, 3] with scales along axis 1: column c divides by (1, 2, 4).
  Tensor x = f32({2, 3}, {4, 4, 4, -8, -8, -8});
  auto y = runOp("QuantizeLinear", {x, f32({3}, {1, 2, 4}), i8({3}, {0, 1, -1})}, {{"axis", ir::Attr(int64_t{1})}});
  EXPECT_EQ(vals<int8_t>(y[0]), (std::vector<int8_t>{4, 3, 0, -8, -3, -3}));
}

TEST(DequantizeLinear, SubtractsTheZeroPointAndScalesPerAxis) {
  auto y = runOp("DequantizeLinear", {i8({2, 2}, {-128, 127, 0, 5}), f32({2}, {0.5f, 0.25f}), i8({2}, {0, 1})},
                 {{"axis", ir::Attr(int64_t{1})}});
  EXPECT_EQ(vals<float>(y[0]), (std::vector<float>{-64.0f, 31.5f, 0.0f, 1.0f}));
  auto z = runOp("DequantizeLinear", {Tensor::fromVector<int32_t>(Shape{2}, {-7, 1 << 20}), scalar(0.5f)});
  EXPECT_EQ(vals<float>(z[0]), (std::vector<float>{-3.5f, 524288.0f}));
}

TEST(QuantizeLinear, ScalesThatDoNotFitTheAxisAreErrors) {
  EXPECT_THROW(runOp("QuantizeLinear", {f32({2, 3}, {0, 0, 0, 0, 0, 0}), f32({2}, {1, 1})}), Error);
  EXPECT_THROW(runOp("QuantizeLinear", {f32({2}, {0, 0}), scalar(1.0f), Tensor::fromVector<int32_t>(Shape{}, {0})}), Error);
}

}  // namespace
}  // namespace npuc::engine::test
