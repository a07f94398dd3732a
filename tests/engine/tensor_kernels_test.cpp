// Tests of the data-movement kernels (engine/ops_tensor.cpp): small hand-computed cases per op.
#include "engine_test_util.hpp"

#include "support/fp16.hpp"

#include <cmath>
#include <limits>
#include <random>

namespace npuc::engine::test {
namespace {

using V = std::vector<int64_t>;
using A = std::map<std::string, ir::Attr>;
using S = std::string;

TEST(TensorKernels, ReshapeAliasesInput) {
  Tensor x = iota({2, 3, 4});
  auto y = runOp("Reshape", {x, i64v({0, -1})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(y[0].raw(), x.raw());
  auto f = runOp("Flatten", {x}, {{"axis", int64_t{2}}});
  EXPECT_EQ(f[0].shape(), (Shape{6, 4}));
  auto sq = runOp("Squeeze", {iota({1, 3, 1}), i64v({-1})});
  EXPECT_EQ(sq[0].shape(), (Shape{1, 3}));
  auto sq11 = runOp("Squeeze", {iota({1, 3, 1})}, {}, 1, 11);
  EXPECT_EQ(sq11[0].shape(), (Shape{3}));
  auto us = runOp("Unsqueeze", {iota({3}), i64v({0, 2})});
  EXPECT_EQ(us[0].shape(), (Shape{1, 3, 1}));
  auto us11 = runOp("Unsqueeze", {iota({3})}, {{"axes", V{-1}}}, 1, 11);
  EXPECT_EQ(us11[0].shape(), (Shape{3, 1}));
}

Tensor naiveTranspose(const Tensor& x, const V& perm) {
  Shape os;
  for (int64_t p : perm) os.push_back(x.dim(static_cast<int>(p)));
  Tensor y(DType::kF32, os);
  size_t r = perm.size();
  std::vector<int64_t> ist(r, 1);
  for (size_t i = r; i-- > 1;) ist[i - 1] = ist[i] * x.shape()[i];
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += idx[d] * ist[static_cast<size_t>(perm[d])];
    y.data<float>()[o] = x.data<float>()[off];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
  return y;
}

TEST(TensorKernels, Transpose) {
  auto y = runOp("Transpose", {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(y[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(y[0]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  Tensor x = iota({2, 5, 7, 19});
  for (const V& perm : {V{0, 2, 3, 1}, V{0, 3, 1, 2}, V{1, 0, 2, 3}, V{3, 2, 1, 0}, V{0, 1, 3, 2}, V{2, 0, 3, 1}}) {
    auto t = runOp("Transpose", {x}, {{"perm", perm}});
    EXPECT_TRUE(t[0].sameBits(naiveTranspose(x, perm))) << fmt::format("perm {}", fmt::join(perm, ","));
  }
  // int64 and float16 elements
  Tensor xi = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(vals<int64_t>(runOp("Transpose", {xi})[0]), (V{1, 4, 2, 5, 3, 6}));
}

TEST(TensorKernels, Concat) {
  auto y = runOp("Concat", {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6}), f32({2, 0}, {})}, {{"axis", int64_t{-1}}});
  EXPECT_EQ(y[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<float>(y[0]), (std::vector<float>{1, 3, 4, 2, 5, 6}));
}

TEST(TensorKernels, Split) {
  Tensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto eq = runOp("Split", {x}, {{"axis", int64_t{1}}}, 2);
  EXPECT_EQ(vals<float>(eq[0]), (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(vals<float>(eq[1]), (std::vector<float>{3, 4, 7, 8}));
  auto in13 = runOp("Split", {x, i64v({1, 3})}, {{"axis", int64_t{1}}}, 2);
  EXPECT_EQ(vals<float>(in13[0]), (std::vector<float>{1, 5}));
  EXPECT_EQ(vals<float>(in13[1]), (std::vector<float>{2, 3, 4, 6, 7, 8}));
  auto attr11 = runOp("Split", {x}, {{"axis", int64_t{1}}, {"split", V{3, 1}}}, 2, 11, {0});
  ASSERT_EQ(attr11.size(), 1u);
  EXPECT_EQ(vals<float>(attr11[0]), (std::vector<float>{4, 8}));
}

TEST(TensorKernels, Slice) {
  Tensor x = iota({3, 4});
  // rows 2..0 backwards, columns 1..3
  auto y = runOp("Slice", {x, i64v({-1, 1}), i64v({-1000, 1000}), i64v({0, 1}), i64v({-1, 1})});
  EXPECT_EQ(y[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(vals<float>(y[0]), (std::vector<float>{9, 10, 11, 5, 6, 7, 1, 2, 3}));
  auto st = runOp("Slice", {x, i64v({0}), i64v({std::numeric_limits<int64_t>::max()}), i64v({1}), i64v({2})});
  EXPECT_EQ(vals<float>(st[0]), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  auto neg = runOp("Slice", {x, i64v({3}), i64v({std::numeric_limits<int64_t>::min()}), i64v({-1}), i64v({-2})});
  EXPECT_EQ(vals<float>(neg[0]), (std::vector<float>{3, 1, 7, 5, 11, 9}));
  auto empty = runOp("Slice", {x, i64v({5}), i64v({10}), i64v({1})});
  EXPECT_EQ(empty[0].shape(), (Shape{3, 0}));
  auto v9 = runOp("Slice", {x}, {{"starts", V{1}}, {"ends", V{2}}, {"axes", V{0}}}, 1, 9);
  EXPECT_EQ(vals<float>(v9[0]), (std::vector<float>{4, 5, 6, 7}));
}

TEST(TensorKernels, Gather) {
  Tensor x = iota({3, 2});
  auto y = runOp("Gather", {x, i64({2, 2}, {0, -1, 1, 0})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(vals<float>(y[0]), (std::vector<float>{0, 1, 4, 5, 2, 3, 0, 1}));
  auto ax1 = runOp("Gather", {x, Tensor::scalar<int32_t>(1)}, {{"axis", int64_t{1}}});
  EXPECT_EQ(ax1[0].shape(), (Shape{3}));
  EXPECT_EQ(vals<float>(ax1[0]), (std::vector<float>{1, 3, 5}));
  expectError([&] { runOp("Gather", {x, i64v({3})}); }, ErrorCode::kInvalidInput);
  expectError([&] { runOp("Gather", {x, i64v({-4})}); }, ErrorCode::kInvalidInput);
}

TEST(TensorKernels, GatherElements) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  auto y = runOp("GatherElements", {x, i64({2, 2}, {0, 0, 1, 0})}, {{"axis", int64_t{1}}});
  EXPECT_EQ(vals<float>(y[0]), (std::vector<float>{1, 1, 4, 3}));
  auto y0 = runOp("GatherElements", {x, i64({1, 2}, {1, -2})});
  EXPECT_EQ(vals<float>(y0[0]), (std::vector<float>{3, 2}));
  expectError([&] { runOp("GatherElements", {x, i64({1, 2}, {2, 0})}); }, ErrorCode::kInvalidInput);
}

TEST(TensorKernels, ExpandAndTile) {
  auto e = runOp("Expand", {f32({3, 1}, {1, 2, 3}), i64v({2, 1, 2})});
  EXPECT_EQ(e[0].shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(vals<float>(e[0]), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  auto t = runOp("Tile", {f32({2, 2}, {1, 2, 3, 4}), i64v({2, 2})});
  EXPECT_EQ(t[0].shape(), (Shape{4, 4}));
  EXPECT_EQ(vals<float>(t[0]), (std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4}));
}

TEST(TensorKernels, Pad) {
  Tensor x = f32({1, 3}, {1, 2, 3});
  auto c = runOp("Pad", {x, i64v({0, 2, 0, 1}), Tensor::scalar<float>(9)});
  EXPECT_EQ(vals<float>(c[0]), (std::vector<float>{9, 9, 1, 2, 3, 9}));
  auto r = runOp("Pad", {x, i64v({0, 2, 0, 2})}, {{"mode", S("reflect")}});
  EXPECT_EQ(vals<float>(r[0]), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  auto e = runOp("Pad", {x, i64v({1, 1, 0, 1})}, {{"mode", S("edge")}});
  EXPECT_EQ(e[0].shape(), (Shape{2, 5}));
  EXPECT_EQ(vals<float>(e[0]), (std::vector<float>{1, 1, 2, 3, 3, 1, 1, 2, 3, 3}));
  auto crop = runOp("Pad", {x, i64v({0, -1, 0, 1})});
  EXPECT_EQ(vals<float>(crop[0]), (std::vector<float>{2, 3, 0}));
  auto v7 = runOp("Pad", {x}, {{"pads", V{0, 1, 0, 0}}, {"value", 5.0f}}, 1, 7);
  EXPECT_EQ(vals<float>(v7[0]), (std::vector<float>{5, 1, 2, 3}));
  expectError([&] { runOp("Pad", {x, i64v({0, 1, 0, 0})}, {{"mode", S("mirror")}}); }, ErrorCode::kUnsupported);
}

TEST(TensorKernels, ShapeSizeConstants) {
  Tensor x = iota({2, 3, 4});
  EXPECT_EQ(vals<int64_t>(runOp("Shape", {x})[0]), (V{2, 3, 4}));
  EXPECT_EQ(vals<int64_t>(runOp("Shape", {x}, {{"start", int64_t{-2}}}, 1, 15)[0]), (V{3, 4}));
  EXPECT_EQ(vals<int64_t>(runOp("Shape", {x}, {{"end", int64_t{1}}}, 1, 15)[0]), (V{2}));
  EXPECT_EQ(vals<int64_t>(runOp("Size", {x})[0]), (V{24}));
  EXPECT_EQ(vals<float>(runOp("Constant", {}, {{"value_floats", std::vector<float>{1.5f, 2}}})[0]),
            (std::vector<float>{1.5f, 2}));
  EXPECT_EQ(vals<int64_t>(runOp("Constant", {}, {{"value_int", int64_t{7}}})[0]), (V{7}));
  auto cs = runOp("ConstantOfShape", {i64v({2, 2})}, {{"value", Tensor::fromVector<int32_t>({1}, {3})}});
  EXPECT_EQ(vals<int32_t>(cs[0]), (std::vector<int32_t>{3, 3, 3, 3}));
  auto cz = runOp("ConstantOfShape", {i64v({3})});
  EXPECT_EQ(vals<float>(cz[0]), (std::vector<float>{0, 0, 0}));
}

TEST(TensorKernels, Range) {
  auto f = runOp("Range", {Tensor::scalar<float>(1), Tensor::scalar<float>(2), Tensor::scalar<float>(0.25f)});
  EXPECT_EQ(vals<float>(f[0]), (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  auto i = runOp("Range", {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4), Tensor::scalar<int32_t>(-3)});
  EXPECT_EQ(vals<int32_t>(i[0]), (std::vector<int32_t>{10, 7}));
  // Issue 46.7: a count past what a tensor holds, or not a number, is an error (it became an empty tensor).
  expectError([] { runOp("Range", {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::max()), Tensor::scalar<int64_t>(1)}); },
              ErrorCode::kInvalidInput);
  expectError([] { runOp("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(1e30f), Tensor::scalar<float>(1e-30f)}); },
              ErrorCode::kInvalidInput);
  expectError([] { runOp("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(NAN), Tensor::scalar<float>(1)}); },
              ErrorCode::kInvalidInput);
  EXPECT_EQ(runOp("Range", {Tensor::scalar<float>(5), Tensor::scalar<float>(1), Tensor::scalar<float>(1)})[0].numel(), 0);
}

TEST(TensorKernels, DepthSpace) {
  Tensor x = iota({1, 8, 1, 1});
  auto dcr = runOp("DepthToSpace", {x}, {{"blocksize", int64_t{2}}});
  EXPECT_EQ(dcr[0].shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(vals<float>(dcr[0]), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  auto crd = runOp("DepthToSpace", {x}, {{"blocksize", int64_t{2}}, {"mode", S("CRD")}});
  EXPECT_EQ(vals<float>(crd[0]), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  Tensor big = iota({2, 3, 4, 6});
  auto s2d = runOp("SpaceToDepth", {big}, {{"blocksize", int64_t{2}}});
  EXPECT_EQ(s2d[0].shape(), (Shape{2, 12, 2, 3}));
  // out[0, (bi*2+bj)*3 + c, h, w] = in[0, c, 2h+bi, 2w+bj]: channel 4 = (0*2+1)*3 + 1 -> c=1, bi=0, bj=1
  EXPECT_EQ(s2d[0].data<float>()[4 * 6 + 1 * 3 + 2], big.data<float>()[1 * 24 + 2 * 6 + 5]);
  auto back = runOp("DepthToSpace", {s2d[0]}, {{"blocksize", int64_t{2}}});
  EXPECT_TRUE(back[0].sameBits(big));
  expectError([&] { runOp("DepthToSpace", {x}, {{"blocksize", int64_t{2}}, {"mode", S("XYZ")}}); }, ErrorCode::kUnsupported);
}

TEST(TensorKernels, TopK) {
  Tensor x = f32({2, 4}, {1, 3, 3, 2, 5, NAN, 0, -1});
  auto l = runOp("TopK", {x, i64v({2})}, {}, 2);
  EXPECT_EQ(vals<int64_t>(l[1]), (V{1, 2, 1, 0}));
  EXPECT_EQ(l[0].data<float>()[0], 3.0f);
  EXPECT_TRUE(std::isnan(l[0].data<float>()[2]));
  auto s = runOp("TopK", {x, i64v({3})}, {{"largest", int64_t{0}}}, 2);
  EXPECT_EQ(vals<int64_t>(s[1]), (V{0, 3, 1, 3, 2, 0}));
  EXPECT_EQ(s[0].data<float>()[3], -1.0f);
  auto ax0 = runOp("TopK", {f32({2, 2}, {1, 4, 2, 3})}, {{"axis", int64_t{0}}, {"k", int64_t{1}}}, 2, 9);
  EXPECT_EQ(vals<float>(ax0[0]), (std::vector<float>{2, 4}));
  EXPECT_EQ(vals<int64_t>(ax0[1]), (V{1, 0}));
}

TEST(TensorKernels, ResizeNearestAndLinear) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor none;
  auto lin = runOp("Resize", {x, none, f32({4}, {1, 1, 2, 2})}, {{"mode", S("linear")}});
  EXPECT_EQ(lin[0].shape(), (Shape{1, 1, 4, 4}));
  std::vector<float> expect_lin{1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4};
  auto got = vals<float>(lin[0]);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], expect_lin[i]) << i;
  auto ac = runOp("Resize", {x, none, f32({4}, {1, 1, 1, 1.5f})},
                  {{"mode", S("linear")}, {"coordinate_transformation_mode", S("align_corners")}});
  EXPECT_EQ(ac[0].shape(), (Shape{1, 1, 2, 3}));
  EXPECT_EQ(vals<float>(ac[0]), (std::vector<float>{1, 1.5f, 2, 3, 3.5f, 4}));
  auto nn = runOp("Resize", {x, none, none, i64v({1, 1, 3, 3})},
                  {{"coordinate_transformation_mode", S("asymmetric")}, {"nearest_mode", S("floor")}});
  EXPECT_EQ(vals<float>(nn[0]), (std::vector<float>{1, 1, 2, 1, 1, 2, 3, 3, 4}));
  auto up9 = runOp("Upsample", {x, f32({4}, {1, 1, 2, 1})}, {}, 1, 9);
  EXPECT_EQ(vals<float>(up9[0]), (std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4}));
  auto up7 = runOp("Upsample", {x}, {{"scales", std::vector<float>{1, 1, 1, 2}}}, 1, 7);
  EXPECT_EQ(vals<float>(up7[0]), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4}));
  // Resize-10 nearest downsampling takes ceil of the asymmetric coordinate (ONNX test data).
  auto down10 = runOp("Resize", {iota({1, 1, 2, 4}), f32({4}, {1, 1, 0.6f, 0.6f})}, {}, 1, 10);
  EXPECT_EQ(vals<float>(down10[0]), (std::vector<float>{0, 2}));
  // tf_crop_and_resize outside the roi takes the extrapolation value
  auto crop = runOp("Resize", {x, f32({8}, {0, 0, 0, 0, 1, 1, 1, 2}), f32({4}, {1, 1, 1, 2})},
                    {{"mode", S("linear")}, {"coordinate_transformation_mode", S("tf_crop_and_resize")},
                     {"extrapolation_value", 10.0f}});
  EXPECT_EQ(crop[0].shape(), (Shape{1, 1, 2, 4}));
  EXPECT_EQ(crop[0].data<float>()[3], 10.0f);
  EXPECT_FLOAT_EQ(crop[0].data<float>()[1], 1 + 2.0f / 3.0f);
  expectError([&] { runOp("Resize", {x, none, f32({4}, {1, 1, 2, 2})}, {{"mode", S("bicubic")}}); },
              ErrorCode::kUnsupported);
}

TEST(TensorKernels, ResizeCubicHalf) {
  // cubic on a constant image stays constant (weights sum to 1), in float16 too
  Tensor x(DType::kF16, {1, 1, 3, 3});
  for (int64_t i = 0; i < 9; ++i) static_cast<uint16_t*>(x.raw())[i] = floatToHalf(2.5f);
  Tensor none;
  auto y = runOp("Resize", {x, none, f32({4}, {1, 1, 2, 2})}, {{"mode", S("cubic")}});
  ASSERT_EQ(y[0].dtype(), DType::kF16);
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 6, 6}));
  for (int64_t i = 0; i < 36; ++i) EXPECT_EQ(halfToFloat(static_cast<const uint16_t*>(y[0].raw())[i]), 2.5f);
}

TEST(TensorKernels, NonZero) {
  auto y = runOp("NonZero", {f32({2, 2}, {1, 0, 0, 3})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<int64_t>(y[0]), (V{0, 1, 0, 1}));
}

// max_output_boxes_per_class = INT64_MAX is how torchvision exports "no limit" (its batched NMS): the limit read as a
// double overflowed to a negative count and the engine selected nothing (SSDlite gave 0 detections, exit 0).
TEST(TensorKernels, NonMaxSuppressionWithoutALimit) {
  Tensor boxes = f32({1, 3, 4}, {0, 0, 10, 10, 0, 1, 10, 11, 20, 20, 30, 30});
  Tensor scores = f32({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  for (int64_t limit : {std::numeric_limits<int64_t>::max(), int64_t{3}, int64_t{1}}) {
    auto y = runOp("NonMaxSuppression", {boxes, scores, i64v({limit}), f32({1}, {0.5f})});
    const std::vector<int64_t> want = limit == 1 ? V{0, 0, 0} : V{0, 0, 0, 0, 0, 2};  // box 1 overlaps box 0
    EXPECT_EQ(vals<int64_t>(y[0]), want) << "limit " << limit;
  }
}

}  // namespace
}  // namespace npuc::engine::test

// torchvision exports Swin-T and ViT with Dropout(ratio = 0, training_mode = true): nothing is dropped, an identity.
// A non-zero ratio in training mode is random and stays refused (issue 22's torchvision survey).
TEST(Dropout, TrainingModeWithRatioZeroIsAnIdentity) {
  using namespace npuc;
  using engine::test::runOp;
  Tensor x = Tensor::fromVector<float>({2, 3}, {1, -2, 3, -4, 5, -6});
  Tensor yes(DType::kBool, {});
  *static_cast<uint8_t*>(yes.raw()) = 1;
  auto out = runOp("Dropout", {x, Tensor::scalar<float>(0.0f), yes});
  EXPECT_TRUE(out[0].sameBits(x));
  try {
    runOp("Dropout", {x, Tensor::scalar<float>(0.5f), yes});
    ADD_FAILURE() << "random dropout ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("ratio 0.5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(runOp("Dropout", {x, Tensor(), yes}), Error);  // the default ratio is 0.5
}
