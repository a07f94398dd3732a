// The reader's checks of the pre/post-processing layer kinds (validate.hpp): cast, colour conversions, crop, resize,
// normalize, softmax and argmin/argmax over images, the AIPP stage. Their geometry rules are the kernels' own
// (kernels/prepost.hpp, kernels/aipp.hpp: one definition for the validator and the kernels).
#include "package/validate.hpp"

#include "kernels/aipp.hpp"
#include "kernels/prepost.hpp"

#include <cstring>

namespace npuc::package {

namespace {

/// The checks of this family, members of a LayerCheck: they read the descriptor (d, x, y, w, what) by name.
struct PrePostChecks : LayerCheck {
  void cast() const {
    // Any two package types (ONNX Cast: kernels::castValues); the pre/post casts are uint8 / float16 / float32 to a
    // float type.
    if (x.type == y.type) bad("{}: cast from {} to itself", what, elemName(x.type));
    if (x.numel() != y.numel()) bad("{}: {} -> {} changes the element count", what, dimsStr(x), dimsStr(y));
  }

  void yuvOrGray() const {
    typeIs(x, ElemType::kU8, "x");
    typeIs(y, ElemType::kU8, "y");
    bool rgb = d.kind == LayerKind::kYuvToRgb;
    if (y.rank != 3 || y.dims[2] != (rgb ? 3u : 1u)) bad("{}: output {} is not [H, W, {}]", what, dimsStr(y), rgb ? 3 : 1);
    int64_t H = y.dims[0], W = y.dims[1], f = si(0);
    int64_t need = -1;
    if (rgb) {
      if (w[1] > 1) bad("{}: bgr flag {} is not 0 or 1", what, w[1]);
      if (!kernels::isYuvFormat(static_cast<int32_t>(f))) bad("{}: unknown DIN_YUV_FORMAT code {}", what, f);
      if (W >= 2 && W % 2 == 0 && H >= 1) need = kernels::yuvBufferSize(static_cast<kernels::YuvFormat>(f), H, W);
    } else {
      if (!kernels::isGrayFormat(static_cast<int32_t>(f))) bad("{}: unknown DIN_FORMAT code {}", what, f);
      if (f >= 4096) need = H * W * 3;
      else if (W >= 2 && W % 2 == 0) need = H * W * 2;
    }
    // A YUV frame fills the start of its input (a 4:2:0 frame is smaller than its [H, W, 2] declaration).
    if (need < 0 || (rgb ? static_cast<uint64_t>(need) > x.numel() : static_cast<uint64_t>(need) != x.numel()))
      bad("{}: a {}x{} image in format {} does not match the input {} ({} bytes)", what, H, W, f, dimsStr(x), x.bytes);
  }

  void crop() const {
    if (x.type != ElemType::kU8 && x.type != ElemType::kF16) bad("{}: crops uint8 or float16, not {}", what, elemName(x.type));
    typeIs(y, x.type, "y");
    rankIs(x, 3, "x"); rankIs(y, 3, "y");
    if (w[0] > 1) bad("{}: layout {} is not 0 (HWC) or 1 (CHW)", what, w[0]);
    bool chw = w[0] == 1;
    uint64_t H = chw ? x.dims[1] : x.dims[0], W = chw ? x.dims[2] : x.dims[1], C = chw ? x.dims[0] : x.dims[2];
    if (y.dims[2] != C || uint64_t(w[1]) + y.dims[0] > H || uint64_t(w[2]) + y.dims[1] > W)
      bad("{}: a {}x{} window at ({}, {}) does not fit the input {}", what, y.dims[0], y.dims[1], w[1], w[2], dimsStr(x));
  }

  void resizeHwc() const {
    if (x.type != ElemType::kU8 && x.type != ElemType::kF16) bad("{}: resizes uint8 or float16, not {}", what, elemName(x.type));
    typeIs(y, x.type, "y");
    rankIs(x, 3, "x"); rankIs(y, 3, "y");
    if (w[0] > 1) bad("{}: algorithm {} is not 0 (nearest) or 1 (bilinear)", what, w[0]);
    if (y.dims[2] != x.dims[2] || x.dims[0] < 1 || x.dims[1] < 1) bad("{}: {} -> {}", what, dimsStr(x), dimsStr(y));
  }

  void normalize() const {
    if (x.type != ElemType::kU8 && x.type != ElemType::kF16) bad("{}: normalizes float16 (or uint8), not {}", what, elemName(x.type));
    typeIs(y, ElemType::kF16, "y");
    if (x.rank < 1 || dimsOf(x) != dimsOf(y)) bad("{}: {} -> {}", what, dimsStr(x), dimsStr(y));
    uint32_t C = x.dims[x.rank - 1];
    if (C < 1 || C > 4096) bad("{}: {} channels (1..4096)", what, C);
    if (w[0] > 1 || (w[0] == 1 && C != 3)) bad("{}: swap_rb {} needs 0, or 1 with 3 channels", what, w[0]);
  }

  void postSoftmax() const {
    typeIs(x, ElemType::kF16, "x");
    if (y.type != ElemType::kF16 && y.type != ElemType::kF32) bad("{}: output is {} (float16 or float32)", what, elemName(y.type));
    if (x.numel() != y.numel()) bad("{}: {} -> {}", what, dimsStr(x), dimsStr(y));
  }

  void argMinMax() const {
    typeIs(x, ElemType::kF16, "x");
    if (y.type != ElemType::kU8 && y.type != ElemType::kU16) bad("{}: output is {} (uint8 or uint16)", what, elemName(y.type));
    rankIs(x, 3, "x"); rankIs(y, 3, "y");
    if (w[0] > 1 || w[1] > 2 || w[2] > 1) bad("{}: layout {} / axis {} / mode {} out of range", what, w[0], w[1], w[2]);
    bool chw = w[0] == 1;
    // The dimension index of the reduced axis in the input's layout.
    size_t red = w[1] == 0 ? (chw ? 0 : 2) : w[1] == 1 ? (chw ? 2 : 1) : (chw ? 1 : 0);
    for (size_t i = 0; i < 3; ++i)
      if (y.dims[i] != (i == red ? 1u : x.dims[i])) bad("{}: {} reduced along dim {} is not {}", what, dimsStr(x), red, dimsStr(y));
    uint32_t len = x.dims[red];
    if (len < 1 || len > (y.type == ElemType::kU8 ? 256u : 65536u))
      bad("{}: {} values along the reduced axis do not fit {} indices", what, len, elemName(y.type));
  }

  void aipp() const {
    typeIs(x, ElemType::kU8, "frame");
    isFloat(y, "y");
    rankIs(x, 2, "frame"); rankIs(y, 4, "y");
    bool dynamic = d.n_in == 2;
    if (w[0] != (dynamic ? 1u : 0u)) bad("{}: the dynamic flag {} does not match its {} input(s)", what, w[0], d.n_in);
    const uint32_t N = y.dims[0];
    if (x.dims[0] != N || x.dims[1] < 1) bad("{}: frame {} for {} image(s)", what, dimsStr(x), N);
    if (y.dims[1] != 1 && y.dims[1] != 3 && y.dims[1] != 4) bad("{}: output {} has {} channels (1, 3 or 4)", what, dimsStr(y), y.dims[1]);
    if (N < 1 || N > 127) bad("{}: batch {} (1..127: batchNum is an int8)", what, N);
    if (dynamic) {
      const TensorRef& pr = d.in(1);
      typeIs(pr, ElemType::kU8, "parameter block");
      if (pr.rank != 1 || pr.dims[0] != kernels::aippBlockSize(N))
        bad("{}: the parameter block is {}, for {} image(s) it must be [{}] (kAippDynamicPara + {} x kAippDynamicBatchPara)", what,
            dimsStr(pr), N, kernels::aippBlockSize(N), N - 1);
    } else {
      std::vector<uint8_t> block(kernels::aippBlockSize(N));
      std::memcpy(block.data(), w.data() + kernels::kAippHeaderWords, block.size());
      kernels::AippSetup st;
      st.n = N;
      st.channels = y.dims[1];
      st.height = y.dims[2];
      st.width = y.dims[3];
      st.image_bytes = x.dims[1];
      for (size_t c = 0; c < 4; ++c) st.padding_value[c] = paramFloat(w[1 + c]);
      std::string why;
      try {
        why = kernels::checkAipp(kernels::decodeAipp(block.data(), block.size()), st);
      } catch (const Error& e) {
        why = e.what();
      }
      if (!why.empty()) bad("{}: static AIPP parameters: {}", what, why);
    }
  }
};

}  // namespace

const KindCheck kind_checks::kCast = [](const LayerCheck& c) { PrePostChecks{c}.cast(); };
const KindCheck kind_checks::kYuvToRgb = [](const LayerCheck& c) { PrePostChecks{c}.yuvOrGray(); };
const KindCheck kind_checks::kToGray = [](const LayerCheck& c) { PrePostChecks{c}.yuvOrGray(); };
const KindCheck kind_checks::kCrop = [](const LayerCheck& c) { PrePostChecks{c}.crop(); };
const KindCheck kind_checks::kResizeHwc = [](const LayerCheck& c) { PrePostChecks{c}.resizeHwc(); };
const KindCheck kind_checks::kNormalize = [](const LayerCheck& c) { PrePostChecks{c}.normalize(); };
const KindCheck kind_checks::kPostSoftmax = [](const LayerCheck& c) { PrePostChecks{c}.postSoftmax(); };
const KindCheck kind_checks::kArgMinMax = [](const LayerCheck& c) { PrePostChecks{c}.argMinMax(); };
const KindCheck kind_checks::kAipp = [](const LayerCheck& c) { PrePostChecks{c}.aipp(); };

}  // namespace npuc::package
