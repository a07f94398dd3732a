// npuc quantize: int8-affine quantization of an ONNX model as QuantizeLinear / DequantizeLinear pairs (QDQ),
// calibrated on samples with the reference engine; writes the quantized model (standard ONNX) and its table.
#include "cli_common.hpp"

#include <fmt/format.h>

namespace npuc::cli {

void addQuantize(Command& app, Action& run) {
  auto* c = app.subcommand(
      "quantize",
      "Quantize a model to int8 (QDQ ONNX: per-channel int8 weights, int32 biases, per-tensor int8 activations) "
      "calibrated on samples; `npuc eval` and `npuc run` run the result, so does any ONNX runtime. For int8 packages "
      "(integer convolutions) translate for target generic-int8 with --calib (docs/numerics.md)");
  addCustomOpOption(c);
  struct Opts {
    std::string model, caffemodel, output, table, method = "minmax", scheme = "affine", equalize, calib_mean, calib_scale;
    bool calib_bgr = false;
    std::vector<std::string> calib, shapes;
    double percentile = 99.99;
    bool per_tensor = false, bias_correction = false, adaround = false, absorb_bias = false;
    std::vector<std::string> keep_float, ranges;
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  addModelPositionals(c, o->model, o->caffemodel);
  c->option("--calib", o->calib, "Calibration samples of model input NAME: NAME=FILE.npy, the samples stacked along the "
                "first axis (repeatable; several files of one name add up; NAME=DIR: the folder's .npy shards in name order)")->required();
  c->option("--calib-mean", o->calib_mean, "A folder of pictures as --calib NAME=DIR (no .npy in it): each resized to the input's "
                                               "H x W, RGB (luma for 1 channel), then (v - M) per channel (M or M,M,M; default 0)");
  c->option("--calib-scale", o->calib_scale, "... times S (S or S,S,S; default 1/255; docs/calibration.md)");
  c->flag("--calib-bgr", o->calib_bgr, "Pictures in B, G, R order (default R, G, B)");
  c->option("--output,-o", o->output, "The quantized model (.onnx)")->required();
  c->option("--table", o->table, "Also write the per-tensor table (range, scale, zero point, SNR, clipped fraction, warnings): "
                                     "T.csv, T.xlsx or T.html by the extension");
  c->option("--method", o->method, "Activation range method: minmax | percentile | entropy | mse (docs/calibration.md)");
  c->option("--percentile", o->percentile, "The percentile of --method percentile")->range(1e-9, 100.0);
  c->option("--scheme", o->scheme, "Activations: affine (scale and zero point, default), symmetric (zero point 0, scale "
                                     "max|x| / 127: int8-symmetric) or radix (Kneron's int8-radix: zero point 0, power-of-two "
                                     "scales; docs/numerics.md)")
      ->oneOf({"affine", "symmetric", "radix"});
  c->flag("--per-tensor", o->per_tensor, "One scale per weight tensor (default: per output channel)");
  c->flag("--bias-correction", o->bias_correction, "Correct each Conv / Gemm bias for the mean shift its int8 weights cause, "
                                                       "measured on the calibration samples (docs/calibration.md)");
  c->flag("--adaround", o->adaround, "Round each Conv / Gemm's int8 weights up or down so that its output on the calibration "
                                         "samples moves least (AdaRound; docs/calibration.md; not with --bias-correction)");
  c->flag("--absorb-bias", o->absorb_bias, "A channel a Relu never takes to zero on the calibration samples gives its floor to the "
                                               "next unpadded convolution's bias (after --equalize; docs/calibration.md)");
  c->option("--equalize", o->equalize, "Cross-layer equalization before calibration, for per-tensor weights: relu (consecutive "
                                           "convolutions through Relu / LeakyRelu: the same function) or relu6 (Relu6 made Relu "
                                           "first, as the paper does; docs/calibration.md)")
      ->oneOf({"relu", "relu6"});
  c->option("--keep-float", o->keep_float, "Keep this layer (node name) in float32: float weights, computed between DequantizeLinear and QuantizeLinear; layers kept in a row exchange float values (repeatable)");
  c->option("--range", o->ranges, "Quantize this tensor over LO..HI instead of its calibrated range: TENSOR=LO,HI (repeatable)");
  c->option("--input-shape", o->shapes, "Fix an input's shape: name=1,3,224,224 (repeatable)");
  c->option("--threads,-t", o->threads, "Calibration threads (default: all cores; the result is the same)")->range(1, 256);
  c->callback([o, &run] {
    run = [o] {
      LoadOptions lo;
      lo.input_shapes = parseShapes(o->shapes);
      lo.caffe_model = o->caffemodel;
      Model m = Model::load(o->model, lo);
      QuantizeOptions qo;
      qo.calibration = parseTensorLists(o->calib, "--calib", pictureReader(o->model, lo.input_shapes, o->calib_mean, o->calib_scale,
                                                                           o->calib_bgr, o->caffemodel));
      qo.method = o->method;
      qo.scheme = o->scheme;
      qo.percentile = o->percentile;
      qo.per_channel = !o->per_tensor;
      qo.keep_float = o->keep_float;
      qo.ranges = parseRanges(o->ranges);
      qo.threads = o->threads;
      qo.bias_correction = o->bias_correction;
      qo.adaround = o->adaround;
      qo.equalize = o->equalize;
      qo.absorb_bias = o->absorb_bias;
      double t0 = nowMs();
      QuantizeReport rep;
      Model q = m.quantizedQdq(qo, &rep);
      double t1 = nowMs();
      int acts = 0, weights = 0, biases = 0;
      size_t wn = 4;
      for (auto& t : rep.tensors) {
        acts += t.kind == "activation";
        weights += t.kind == "weight";
        biases += t.kind == "bias";
        wn = std::max(wn, t.name.size());
      }
      fmt::print("{:<{}}  {:<10} {:>12} {:>12} {:>12} {:>4} {:>5} {:>8} {:>7}\n", "name", wn, "kind", "lo", "hi", "scale", "zp",
                 "ch", "snr dB", "clip %");
      for (auto& t : rep.tensors) {
        const bool act = t.kind == "activation";
        fmt::print("{:<{}}  {:<10} {:>12.6g} {:>12.6g} {:>12.6g} {:>4} {:>5} {:>8} {:>7}{}\n", t.name, wn, t.kind, t.lo, t.hi,
                   t.scale, t.zero_point, t.channels, act ? fmt::format("{:.1f}", t.snr_db) : "",
                   act ? fmt::format("{:.3f}", 100 * t.saturated) : "", t.warning.empty() ? "" : "  ! " + t.warning);
      }
      if (rep.bias_corrected) fmt::print("bias correction: {} layer(s)\n", rep.bias_corrected);
      if (o->absorb_bias) fmt::print("bias absorption: {} layer(s)\n", rep.bias_absorbed);
      for (auto& w : rep.warnings) fmt::print(stderr, "warning: {}\n", w);
      q.saveOnnx(o->output);
      if (!o->table.empty()) writeQuantizeTable(rep, o->table);
      fmt::print("calibration: {} sample(s), method {}, {:.1f} ms\nquantized: {} activation(s), {} weight tensor(s) ({}), {} bias(es)\nwrote {}{}\n",
                 rep.samples, o->method, t1 - t0, acts, weights, o->per_tensor ? "per tensor" : "per channel", biases,
                 o->output, o->table.empty() ? "" : ", " + o->table);
      return 0;
    };
  });
}

}  // namespace npuc::cli
