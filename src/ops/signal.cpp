// Schemas of the signal-processing ops of opset 17: HannWindow, HammingWindow, BlackmanWindow, DFT, STFT,
// MelWeightMatrix. Sizes given as inputs (a window's size, dft_length, frame_step, …) must be known to give the output
// shape: constants in a model, or at run time.
#include "ops/registry.hpp"
#include "ops/shape_util.hpp"

namespace npuc::ops {

namespace {

int64_t scalarInt(InferContext& c, int i, const char* what) {
  if (!isInteger(c.inputDType(i))) c.error("{} must be an integer, got {}", what, dtypeName(c.inputDType(i)));
  const std::vector<int64_t> v = c.inputInts(i);
  if (v.size() != 1) c.error("{} must hold one value, got {}", what, v.size());
  return v[0];
}

void needFloatOutput(InferContext& c) {
  const int64_t t = c.node().attrInt("output_datatype", 1);
  if (t != 1) c.unsupported("output_datatype {} (npuc computes these ops in float32: 1)", t);
}

/// The signal's components: its last axis, 1 (real) or 2 (complex).
int components(InferContext& c, const Shape& x, const char* what) {
  if (x.size() < 3 || (x.back() != 1 && x.back() != 2))
    c.error("{} must be [batch, …, 1 or 2] (real or complex), got {}", what, shapeStr(x));
  if (c.inputDType(0) != DType::kF32) c.unsupported("{} is {}; npuc takes float32", what, dtypeName(c.inputDType(0)));
  return static_cast<int>(x.back());
}

}  // namespace

void registerSignalOps(Registry& r) {
  for (const char* name : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    r.add(makeSchema(name, 1, 1, "a window of the given size, periodic or symmetric (opset 17)", [](InferContext& c) {
            needFloatOutput(c);
            if (!c.knownValue(0)) {  // a computed size: one dim, open (a declaration may fix it)
              c.setOutputType(0, ir::makeType(DType::kF32, {-1}));
              return;
            }
            const int64_t n = scalarInt(c, 0, "size");
            if (n < 0 || n > (int64_t{1} << 30)) c.error("size {} is not a window size", n);
            c.setOutput(0, DType::kF32, {n});
          }).withDefault("periodic", int64_t{1}).withDefault("output_datatype", int64_t{1}));
  r.add(makeSchema("DFT", 1, 2, "discrete Fourier transform along one axis (real or complex input, opset 17)",
                   [](InferContext& c) {
                     const Shape& x = c.inputShape(0);
                     const int cpx = components(c, x, "input");
                     int64_t axis = c.node().attrInt("axis", 1);
                     const int64_t rank = static_cast<int64_t>(x.size());
                     if (axis < 0) axis += rank;
                     if (axis < 1 || axis >= rank - 1) c.error("axis {} must be a signal axis (1 … {})", axis, rank - 2);
                     const int64_t length = c.hasInput(1) ? scalarInt(c, 1, "dft_length") : x[static_cast<size_t>(axis)];
                     if (length < 1) c.error("dft_length {} must be positive", length);
                     const bool onesided = c.node().attrInt("onesided", 0) != 0;
                     if (onesided && cpx == 2) c.error("onesided needs a real input (last axis 1)");
                     if (onesided && c.node().attrInt("inverse", 0) != 0) c.unsupported("an inverse onesided DFT");
                     Shape y = x;
                     y[static_cast<size_t>(axis)] = onesided ? length / 2 + 1 : length;
                     y.back() = 2;
                     c.setOutput(0, DType::kF32, y);
                   })
            .withDefault("axis", int64_t{1}).withDefault("inverse", int64_t{0}).withDefault("onesided", int64_t{0}));
  r.add(makeSchema("STFT", 2, 4, "short-time Fourier transform (frames, window, onesided; opset 17)", [](InferContext& c) {
          const Shape& x = c.inputShape(0);
          const int cpx = components(c, x, "signal");
          if (x.size() != 3) c.error("signal must be [batch, samples, 1 or 2], got {}", shapeStr(x));
          const int64_t step = scalarInt(c, 1, "frame_step");
          if (step < 1) c.error("frame_step {} must be positive", step);
          int64_t length = -1;
          if (c.hasInput(2)) {
            const Shape& w = c.inputShape(2);
            if (w.size() != 1) c.error("window must be 1-D, got {}", shapeStr(w));
            if (c.inputDType(2) != DType::kF32) c.unsupported("window is {}; npuc takes float32", dtypeName(c.inputDType(2)));
            length = w[0];
          }
          if (c.hasInput(3)) {
            const int64_t fl = scalarInt(c, 3, "frame_length");
            if (length >= 0 && fl != length) c.error("frame_length {} differs from the window's length {}", fl, length);
            length = fl;
          }
          if (length < 1) c.error("the frame length is not given (frame_length or window)");
          if (length > x[1]) c.error("frame length {} is longer than the signal ({} samples)", length, x[1]);
          const bool onesided = c.node().attrInt("onesided", 1) != 0;
          if (onesided && cpx == 2) c.error("onesided needs a real signal (last axis 1)");
          c.setOutput(0, DType::kF32, {x[0], (x[1] - length) / step + 1, onesided ? length / 2 + 1 : length, 2});
        }).withDefault("onesided", int64_t{1}));
  r.add(makeSchema("MelWeightMatrix", 5, 5, "triangular mel filter bank [dft_length / 2 + 1, num_mel_bins] (opset 17)",
                   [](InferContext& c) {
                     needFloatOutput(c);
                     const int64_t bins = scalarInt(c, 0, "num_mel_bins"), dft = scalarInt(c, 1, "dft_length");
                     const int64_t rate = scalarInt(c, 2, "sample_rate");
                     if (bins < 1 || bins > 65536) c.error("num_mel_bins {} is outside [1, 65536]", bins);
                     if (dft < 1 || dft > (int64_t{1} << 24)) c.error("dft_length {} is outside [1, 2^24]", dft);
                     if (rate < 1) c.error("sample_rate {} must be positive", rate);
                     c.setOutput(0, DType::kF32, {dft / 2 + 1, bins});
                   })
            .withDefault("output_datatype", int64_t{1}));
}

}  // namespace npuc::ops
