// int8-pow2 quantization of an optimized graph (quant/pow2.hpp, docs/numerics.md "int8-pow2").
#include "quant/pow2.hpp"
#include "quant/qdq.hpp"

#include "engine/conv_geometry.hpp"
#include "ops/registry.hpp"
#include "ops/window.hpp"
#include "support/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace npuc::quant {

namespace pw = kernels::pow2;

namespace {

using pw::qForMagnitude;

/// The largest code of a numParamBits-bit parameter (weights, PRelu slopes): 2^(bits-1) - 1.
double paramLimit(int param_bits) { return static_cast<double>((1 << (param_bits - 1)) - 1); }
/// A parameter's nearest code at 2^-q (half away from zero; clamped by the caller).
double nearestCode(float v, int q) { return std::round(std::ldexp(static_cast<double>(v), q)); }

/// The codes standing for a float tensor: the codes' value and its slot.
struct Code {
  ir::ValueId codes = ir::kNoValue;
  int slot = -1;
  bool is_signed = true;
  bool replaced = false;  // the float tensor's producer became an integer layer (it is now a P2Dequantize's output)
};

class Pow2Builder {
 public:
  Pow2Builder(ir::Graph& g, const std::map<std::string, TensorStats>& stats, const Pow2Options& o)
      : g_(g), stats_(stats), o_(o) {}

  Pow2Report run() {
    if (o_.param_bits < 4 || o_.param_bits > 12) fail(ErrorCode::kInvalidArgument, "numParamBits {} is outside 4..12", o_.param_bits);
    if (o_.in_quant_factor > 0) {
      int e = 0;
      const double f = std::frexp(o_.in_quant_factor, &e);
      if (f != 0.5 || e - 1 < pw::kMinQ || e - 1 > pw::kMaxQ)
        fail(ErrorCode::kInvalidArgument, "inQuantFactor {} is not a power of two in [2^{}, 2^{}] (int8-pow2 scales are 2^-q)",
             o_.in_quant_factor, pw::kMinQ, pw::kMaxQ);
      input_fixed_q_ = e - 1;
    }
    for (auto& [name, r] : o_.ranges)
      if (!g_.findValue(name)) fail(ErrorCode::kInvalidArgument, "--range: the model has no tensor '{}'", name);
    for (auto& name : o_.keep_float) {
      bool found = false;
      for (ir::NodeId id : g_.order()) found |= g_.node(id).name == name;
      if (!found) fail(ErrorCode::kInvalidArgument, "--keep-float / --keep-float16: the model has no layer '{}'", name);
    }
    const std::vector<ir::NodeId> order = g_.order();
    for (ir::NodeId id : order) {
      if (!g_.hasNode(id)) continue;
      ir::Node& n = g_.node(id);
      if (o_.keep_float.count(n.name)) {
        rep_.layers.push_back({n.name, "float", 0, 0, "kept in float (--keep-float / --keep-float16)"});
        ++rep_.float_layers;
        continue;
      }
      const std::string why = lower(n);
      if (!why.empty()) {
        rep_.layers.push_back({n.name, "float", 0, 0, why});
        ++rep_.float_layers;
      }
    }
    finishOutputs();
    g_.topoSort();
    return rep_;
  }

 private:
  ir::Graph& g_;
  const std::map<std::string, TensorStats>& stats_;
  const Pow2Options& o_;
  Pow2Report rep_;
  std::map<ir::ValueId, Code> code_;
  int input_fixed_q_ = pw::kNoFixedQ;

  bool isFloat32(ir::ValueId v) const { return g_.value(v).type.dtype == DType::kF32 && !g_.value(v).isConstant(); }
  bool hasCodes(ir::ValueId v) const { return code_.count(v) != 0; }

  std::pair<double, double> rangeOfTensor(const std::string& name, std::string* warning) const {
    auto f = o_.ranges.find(name);
    if (f != o_.ranges.end()) return {std::min(f->second.first, 0.0), std::max(f->second.second, 0.0)};
    auto s = stats_.find(name);
    if (s == stats_.end()) fail(ErrorCode::kInternal, "int8-pow2: no calibration statistics for tensor '{}'", name);
    Range r = rangeOf(s->second, o_.method, o_.percentile);
    if (warning) *warning = r.warning;
    return {r.lo, r.hi};
  }

  /// A new slot for the tensor `name`; its OutSpec (act / clip filled by the caller).
  pw::OutSpec newSlot(const std::string& name, bool is_signed, int fixed_q = pw::kNoFixedQ) {
    Pow2Slot s;
    s.tensor = name;
    s.is_signed = is_signed;
    auto [lo, hi] = rangeOfTensor(name, &s.warning);
    s.lo = lo;
    s.hi = hi;
    s.q = fixed_q != pw::kNoFixedQ ? fixed_q : pw::qForRange(lo, hi, is_signed, o_.margin);
    if (!s.warning.empty()) rep_.warnings.push_back(fmt::format("tensor '{}': {}", name, s.warning));
    // Beyond what 8-bit codes at a q in [kMinQ, kMaxQ] hold: the values saturate, or all round to 0 — said, not silent.
    const double m = is_signed ? std::max(std::fabs(lo), std::fabs(hi)) : std::max(hi, 0.0), top = is_signed ? 127.0 : 255.0;
    if (fixed_q == pw::kNoFixedQ && std::ldexp(m, pw::kMinQ) > top)
      rep_.warnings.push_back(fmt::format("tensor '{}': its calibrated range reaches {:.4g}, beyond the {:.4g} that 8-bit codes "
                                          "hold at the coarsest scale 2^{}: larger values saturate there", name, m,
                                          std::ldexp(top, -pw::kMinQ), -pw::kMinQ));
    if (fixed_q == pw::kNoFixedQ && m > 0 && std::ldexp(m, pw::kMaxQ) < 0.5)
      rep_.warnings.push_back(fmt::format("tensor '{}': its calibrated range peaks at {:.4g}, below half the finest step 2^-{} of "
                                          "8-bit codes: every value becomes 0 (layers after it compute on zeros)", name, m,
                                          pw::kMaxQ));
    pw::OutSpec out;
    out.slot = static_cast<int32_t>(rep_.slots.size());
    out.is_signed = is_signed;
    out.init_lo = static_cast<float>(lo);
    out.init_hi = static_cast<float>(hi);
    out.fixed_q = fixed_q;
    rep_.slots.push_back(s);
    return out;
  }

  ir::ValueId newCodes(const std::string& of, const Shape& shape, bool is_signed) {
    ir::Value& v = g_.addValue(g_.uniqueValueName(of + "/codes"), ir::Type{is_signed ? DType::kI8 : DType::kU8, shape, true});
    v.quant = ir::Quantization{0.0, 0, of};  // (what the codes stand for; their scale 2^-q is the runtime's, per frame)
    return v.id;
  }

  /// The codes of a float tensor, made by a P2Quantize where it has none.
  Code codesOf(ir::ValueId v) {
    auto it = code_.find(v);
    if (it != code_.end()) return it->second;
    const ir::Value& val = g_.value(v);
    const bool input = std::find(g_.inputs().begin(), g_.inputs().end(), v) != g_.inputs().end();
    std::string warning;
    const bool is_signed = input ? o_.input_signed : rangeOfTensor(val.name, &warning).first < 0;
    if (input && !is_signed) refuseNegativeUnsignedInput(val.name);
    pw::OutSpec out = newSlot(val.name, is_signed, input ? input_fixed_q_ : pw::kNoFixedQ);
    pw::Table t;
    t.out = out;
    Code c{newCodes(val.name, val.type.shape, is_signed), out.slot, is_signed, false};
    const std::string name = g_.uniqueValueName(val.name + "/p2_quantize");
    ir::Node& q = g_.addNode("P2Quantize", name, {v}, {c.codes}, "ai.npuc");
    q.attrs["table"] = ir::Attr(tableInts(t));
    rep_.layers.push_back({name, "quantize", 0, 0, ""});
    code_[v] = c;
    return c;
  }

  /// inElementType = 0 declares the inputs unsigned 8-bit: the device clips every negative value to 0. Calibration
  /// data holding negative values says the model expects them (a normalised input): refused, not clipped silently.
  void refuseNegativeUnsignedInput(const std::string& name) const {
    auto s = stats_.find(name);
    if (s == stats_.end() || s->second.negatives() == 0) return;
    const TensorStats& st = s->second;
    fail(ErrorCode::kInvalidArgument,
         "input '{}': inElementType = 0 declares it unsigned 8-bit, but {:.1f}% of its calibration values are negative "
         "(down to {:.6g}); as unsigned codes they would all become 0 (the guide: inElementType 0 is for unsigned "
         "data such as raw image bytes). Give inElementType = 1 (signed) for this data, or data that is not negative",
         name, 100.0 * static_cast<double>(st.negatives()) / static_cast<double>(std::max<int64_t>(st.count(), 1)),
         st.min());
  }

  static std::vector<int64_t> tableInts(const pw::Table& t) {
    auto w = pw::encodeTable(t);
    return std::vector<int64_t>(w.begin(), w.end());
  }

  /// Adds the int8-pow2 op `p2op` named `name`, reading `ins` and writing new codes of the float tensor `y` into the
  /// table's output slot, with `attrs` and the table as its attributes, and the report's row `row`. Returns the codes.
  Code addIntegerLayer(const char* p2op, const std::string& name, const std::vector<ir::ValueId>& ins, const ir::Value& y,
                       const pw::Table& t, std::map<std::string, ir::Attr> attrs, Pow2Layer row) {
    Code cy{newCodes(y.name, y.type.shape, t.out.is_signed), t.out.slot, t.out.is_signed, false};
    ir::Node& p = g_.addNode(p2op, name, ins, {cy.codes}, "ai.npuc");
    p.attrs = std::move(attrs);
    p.attrs["table"] = ir::Attr(tableInts(t));
    rep_.layers.push_back(std::move(row));
    ++rep_.integer_layers;
    return cy;
  }

  /// Replaces n (one float output) by an integer node writing `codes`.
  void replaceOutput(ir::Node& n, Code c) {
    const ir::ValueId out = n.outputs[0];
    c.replaced = true;
    code_[out] = c;
    g_.removeNode(n.id);
  }

  /// The fused activation of a Conv / Gemm twin: Relu and Clip have integer forms; others keep the layer float.
  bool activation(const ir::Node& n, pw::OutSpec& o) const {
    const std::string a = n.attrString("activation", "");
    if (a.empty()) return true;
    if (a == "Relu") {
      o.act = pw::Act::kRelu;
      return true;
    }
    if (a == "Clip") {
      o.act = pw::Act::kClip;
      o.clip_lo = n.attrFloat("activation_alpha", 0);
      o.clip_hi = n.attrFloat("activation_beta", 6);
      return std::isfinite(o.clip_lo) && std::isfinite(o.clip_hi) && o.clip_lo <= o.clip_hi;
    }
    return false;
  }

  std::string lower(ir::Node& n) {
    const bool twin = n.domain == "ai.npuc";
    if ((n.domain.empty() || twin) && (n.op == "Conv" || n.op == "ConvTranspose" || n.op == "Gemm")) return conv(n);
    if (n.domain == "ai.npuc" && n.op == "MaxPool") return moves(n);  // (a Pad folded in: its pad_value)
    if (!n.domain.empty()) return "no int8-pow2 form (kept in float)";
    if (n.op == "Add") return addOp(n);
    if (n.op == "Max" || n.op == "Mul") return maxMulOp(n);
    if (n.op == "PRelu") return preluOp(n);
    if (n.op == "GlobalAveragePool") return gap(n);
    if (n.op == "Concat") return concatOp(n);
    if (n.op == "AveragePool") return avgPoolOp(n);
    if (n.op == "MaxPool" || n.op == "Flatten" || n.op == "Reshape" || n.op == "Squeeze" || n.op == "Unsqueeze" ||
        n.op == "Identity" || n.op == "Slice" || n.op == "Split" || n.op == "Transpose" || n.op == "GlobalMaxPool")
      return moves(n);
    if (n.op == "Resize" || n.op == "Upsample") {
      if (isNearestResize(n)) return moves(n);
      return resizeOp(n);
    }
    if (n.op == "Pad") return padOp(n);
    if (n.op == "ArgMax") return argMaxOp(n);
    if (n.op == "Softmax") return softmaxOp(n);
    return "no int8-pow2 form (kept in float)";
  }

  /// Conv, ConvTranspose (TIDL's Deconvolution) and Gemm: numParamBits-bit weight codes at the layer's one 2^-qw, an int32
  /// bias, exact sums with the fused Relu / Clip.
  std::string conv(ir::Node& n) {
    const bool gemm = n.op == "Gemm", deconv = n.op == "ConvTranspose";
    const ir::Value& x = g_.value(n.inputs[0]);
    const ir::Value& wv = g_.value(n.inputs[1]);
    if (!isFloat32(x.id) || !x.type.isStatic()) return "float32 input of static shape needed";
    if (!wv.isConstant() || wv.constant->dtype() != DType::kF32) return "the weights are not a float32 constant";
    const Tensor& W = *wv.constant;
    const Tensor* B = nullptr;
    if (n.hasInput(2)) {
      const ir::Value& bv = g_.value(n.inputs[2]);
      if (!bv.isConstant() || bv.constant->dtype() != DType::kF32) return "the bias is not a float32 constant";
      B = &*bv.constant;
    }
    int64_t M = 0, K = 0;
    bool transB = false;
    if (gemm) {
      if (x.type.shape.size() != 2 || W.shape().size() != 2) return "Gemm of 2-D operands only";
      if (n.attrInt("transA", 0) != 0 || n.attrFloat("alpha", 1) != 1.0f || n.attrFloat("beta", 1) != 1.0f)
        return "Gemm with transA, alpha or beta";
      transB = n.attrInt("transB", 0) != 0;
      M = transB ? W.dim(0) : W.dim(1);
      K = transB ? W.dim(1) : W.dim(0);
      if (B && B->numel() != M) return "a Gemm bias that is not one value per output";
    } else if (deconv) {  // w [C, M/g, kh, kw]: output m's weights are w[c, m % (M/g)] over its group's C/g channels
      if (x.type.shape.size() != 4 || W.rank() != 4) return "only 2-D transposed convolutions have an int8-pow2 form";
      const int64_t g = n.attrInt("group", 1);
      if (g < 1 || W.dim(0) % g) return "a group that does not divide the input channels";
      M = W.dim(1) * g;
      K = W.dim(0) / g * W.dim(2) * W.dim(3);
      if (B && B->numel() != M) return "a bias that is not one value per output channel";
    } else {
      if (x.type.shape.size() != 4 && x.type.shape.size() != 3) return "only 1-D and 2-D convolutions have an int8-pow2 form";
      M = W.dim(0);
      K = W.numel() / M;
    }
    pw::OutSpec out;
    if (!activation(n, out)) return fmt::format("fused activation '{}' has no int8-pow2 form", n.attrString("activation", ""));
    // Weights: numParamBits-bit codes per layer at 2^-qw.
    const float* w = W.data<float>();
    double wmax = 0;
    for (int64_t i = 0; i < W.numel(); ++i) wmax = std::max(wmax, std::fabs(static_cast<double>(w[i])));
    if (!std::isfinite(wmax)) return "weights are not finite";
    const double wlim = paramLimit(o_.param_bits);
    const int qw = weightQ(wmax, o_.param_bits);
    std::vector<int16_t> codes(static_cast<size_t>(M * K));  // [M, K] (gemm), else in W's element order
    const std::vector<int32_t>* chosen = nullptr;  // AdaRound's, in W's element order
    if (o_.weight_codes)
      if (auto c = o_.weight_codes->find(g_.value(n.inputs[1]).name); c != o_.weight_codes->end() && c->second.size() == static_cast<size_t>(M * K))
        chosen = &c->second;
    // (one shift per layer: an output channel whose weights all lie far below the layer's largest loses them)
    int64_t lost = 0, first_lost = -1;
    // (a transposed convolution's weight for output m and term k: group gi = m / (M/g), channel gi C/g + k / taps, its
    // output slot m % (M/g), tap k % taps)
    const int64_t taps = deconv ? W.dim(2) * W.dim(3) : 1, cg = deconv ? K / taps : 0, mg = deconv ? W.dim(1) : 1;
    for (int64_t m = 0; m < M; ++m) {
      bool nonzero = false, kept = false;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t at = gemm     ? (transB ? m * K + k : k * M + m)
                           : deconv ? ((m / mg * cg + k / taps) * mg + m % mg) * taps + k % taps
                                    : m * K + k;
        const float v = w[at];
        const double near = nearestCode(v, qw);
        const auto c = static_cast<int16_t>(std::clamp(chosen ? static_cast<double>((*chosen)[static_cast<size_t>(at)]) : near, -wlim, wlim));
        codes[static_cast<size_t>(gemm ? m * K + k : at)] = c;
        nonzero = nonzero || v != 0.0f;
        kept = kept || c != 0;
      }
      if (nonzero && !kept && lost++ == 0) first_lost = m;
    }
    // The 40-bit accumulator: K products of 8-bit codes and param_bits-bit weights.
    if (static_cast<double>(K) * 255.0 * wlim >= std::ldexp(1.0, 39)) return "the accumulation could exceed 40 bits";
    double bmax = 0;
    if (B) {
      for (int64_t m = 0; m < M; ++m) bmax = std::max(bmax, std::fabs(static_cast<double>(B->data<float>()[m])));
      if (!std::isfinite(bmax)) return "the bias is not finite";
      if (std::ldexp(bmax, pw::kMinQ) > std::ldexp(1.0, 30)) return "the bias is too large for an int32 at any q";
    }
    if (lost > 0)  // (said only for a layer that becomes integer)
      rep_.warnings.push_back(fmt::format("layer '{}': the weights of {} of its {} output channels (the first: {}) all round to "
                                          "0 at the layer's one scale 2^-{} in {} bits (their outputs are the bias alone); "
                                          "more bits (--numParamBits, up to 12) may keep them", n.name, lost, M, first_lost, qw, o_.param_bits));
    // (every early return above leaves the layer float without touching the graph)
    if (o_.bias_means && correctable(g_, n)) {  // the mean shift of the weights' rounding, out of the bias
      auto mean = o_.bias_means->by_output.find(g_.value(n.outputs[0]).name);
      if (mean != o_.bias_means->by_output.end()) {
        const ChannelRounding stored = [qw, wlim, chosen](float v, int64_t, int64_t i) {
          const double code = chosen ? (*chosen)[static_cast<size_t>(i)] : nearestCode(v, qw);
          return static_cast<float>(std::ldexp(std::clamp(code, -wlim, wlim), -qw));
        };
        if (correctLayerBias(g_, n.id, mean->second, stored)) {
          ++rep_.bias_corrected;
          B = &*g_.value(n.inputs[2]).constant;  // (the new bias: one value per output)
          bmax = 0;
          for (int64_t m = 0; m < M; ++m) bmax = std::max(bmax, std::fabs(static_cast<double>(B->data<float>()[m])));
          if (!std::isfinite(bmax) || std::ldexp(bmax, pw::kMinQ) > std::ldexp(1.0, 30))
            fail(ErrorCode::kInvalidInput, "layer '{}': the bias corrected for the weights' rounding is not an int32 at any q", n.name);
        }
      }
    }
    Code cx = codesOf(x.id);
    const Pow2Slot& xs = rep_.slots[static_cast<size_t>(cx.slot)];
    // Bias: int32 at 2^-qb, qb the calibrated accumulator's q where the bias fits in 30 bits.
    std::vector<int32_t> bias(static_cast<size_t>(M), 0);
    int qb = std::clamp(xs.q + qw, pw::kMinQ, pw::kMaxQ);
    if (B) {
      qb = std::min(qb, qForMagnitude(bmax, std::ldexp(1.0, 30)));
      for (int64_t m = 0; m < M; ++m)
        bias[static_cast<size_t>(m)] = static_cast<int32_t>(std::round(std::ldexp(static_cast<double>(B->data<float>()[m]), qb)));
    }
    const ir::Value& y = g_.value(n.outputs[0]);
    const bool is_signed = !(out.act == pw::Act::kRelu || (out.act == pw::Act::kClip && out.clip_lo >= 0));
    pw::OutSpec spec = newSlot(y.name, is_signed);
    spec.act = out.act;
    spec.clip_lo = out.clip_lo;
    spec.clip_hi = out.clip_hi;
    pw::Table t;
    t.in_slots = {cx.slot};
    t.out = spec;
    t.qw = qw;
    t.qb = qb;
    Shape ws = gemm ? Shape{M, K} : W.shape();
    Tensor wt(DType::kI16, ws);
    std::copy(codes.begin(), codes.end(), wt.data<int16_t>());
    Tensor bt(DType::kI32, {M});
    std::copy(bias.begin(), bias.end(), bt.data<int32_t>());
    const ir::ValueId wc = g_.addConstant(g_.uniqueValueName(wv.name + "/p2"), std::move(wt)).id;
    const ir::ValueId bc = g_.addConstant(g_.uniqueValueName(n.name + "/p2_bias"), std::move(bt)).id;
    std::map<std::string, ir::Attr> attrs;
    if (!gemm)
      for (const char* a : {"group", "kernel_shape", "strides", "pads", "dilations", "auto_pad", "output_padding", "output_shape"})
        if (auto it = n.attrs.find(a); it != n.attrs.end()) attrs[a] = it->second;
    std::string note;
    if (chosen && o_.weight_notes)
      if (auto nt = o_.weight_notes->find(g_.value(n.inputs[1]).name); nt != o_.weight_notes->end()) note = nt->second;
    replaceOutput(n, addIntegerLayer(deconv ? "P2ConvTranspose" : "P2Conv", n.name, {cx.codes, wc, bc}, y, t, std::move(attrs),
                                     {n.name, gemm ? "gemm" : deconv ? "deconv" : "conv", qw, qb, note}));
    return "";
  }

  /// Element-wise Max (both operands brought to the finer q, exact) or Mul (the product of the codes at the sum of
  /// their q's, exact) of two activations of one shape, requantized into the output's slot (TIDL's 8-bit Max / Product).
  std::string maxMulOp(ir::Node& n) {
    if (n.inputs.size() != 2) return fmt::format("a {} of two tensors only", n.op);
    const ir::Value &a = g_.value(n.inputs[0]), &b = g_.value(n.inputs[1]);
    if (!isFloat32(a.id) || !isFloat32(b.id) || !a.type.isStatic() || a.type.shape != b.type.shape)
      return fmt::format("a {} of two float32 tensors of one shape only", n.op);
    if (a.isConstant() || b.isConstant()) return fmt::format("a {} by a constant (two activations only)", n.op);
    if (!hasCodes(a.id) && !hasCodes(b.id)) return "neither operand is held as codes";
    Code ca = codesOf(a.id), cb = codesOf(b.id);
    const ir::Value& y = g_.value(n.outputs[0]);
    // (the maximum with an unsigned operand is not negative, nor is the product of two unsigned ones)
    const bool is_signed = n.op == "Max" ? ca.is_signed && cb.is_signed : ca.is_signed || cb.is_signed;
    pw::OutSpec spec = newSlot(y.name, is_signed);
    pw::Table t;
    t.in_slots = {ca.slot, cb.slot};
    t.out = spec;
    replaceOutput(n, addIntegerLayer(n.op == "Max" ? "P2Max" : "P2Mul", n.name, {ca.codes, cb.codes}, y, t, {},
                                     {n.name, n.op == "Max" ? "max" : "mul", 0, 0, ""}));
    return "";
  }

  /// PRelu with constant slopes (one, or one per channel of dim 1): the slopes as numParamBits-bit codes at 2^-qs (as a
  /// layer's weights), acc = x * 2^qs for x >= 0 and x * slope code below, exact, requantized into the output's slot.
  std::string preluOp(ir::Node& n) {
    const ir::Value &x = g_.value(n.inputs[0]), &sv = g_.value(n.inputs[1]);
    if (!isFloat32(x.id) || !x.type.isStatic() || x.type.shape.size() < 2) return "float32 input of static shape needed";
    if (!sv.isConstant() || sv.constant->dtype() != DType::kF32) return "the slopes are not a float32 constant";
    const Tensor& S = *sv.constant;
    const Shape& xs = x.type.shape;
    const int64_t C = S.numel();
    // One slope, or one per channel: the slopes' shape, right-aligned to x's (numpy broadcasting) and its leading 1s
    // dropped, is [C, 1, ..., 1] ending at x's last dim, C at x's dim 1.
    Shape ss = S.shape();
    while (!ss.empty() && ss[0] == 1) ss.erase(ss.begin());
    bool per_channel = C == 1 && S.rank() <= static_cast<int>(xs.size());
    if (!per_channel && C == xs[1] && ss.size() == xs.size() - 1) {
      per_channel = ss[0] == C;
      for (size_t k = 1; k < ss.size(); ++k) per_channel = per_channel && ss[k] == 1;
    }
    if (!per_channel) return "slopes that are not one value or one per channel";
    double smax = 0;
    for (int64_t c = 0; c < C; ++c) smax = std::max(smax, std::fabs(static_cast<double>(S.data<float>()[c])));
    if (!std::isfinite(smax)) return "the slopes are not finite";
    const int qs = weightQ(smax, o_.param_bits);
    if (qs < 0) return "slopes too large for an integer form (their q would be negative)";
    const double lim = paramLimit(o_.param_bits);
    Tensor codes(DType::kI16, Shape{C});
    int64_t lost = 0, first_lost = -1;  // (one shift for every slope: one far below the largest may round to 0)
    for (int64_t c = 0; c < C; ++c) {
      const float v = S.data<float>()[c];
      codes.data<int16_t>()[c] = static_cast<int16_t>(std::clamp(nearestCode(v, qs), -lim, lim));
      if (v != 0.0f && codes.data<int16_t>()[c] == 0 && lost++ == 0) first_lost = c;
    }
    if (lost > 0)
      rep_.warnings.push_back(fmt::format("layer '{}': {} of its {} PRelu slopes (the first: channel {}) round to 0 at the layer's "
                                          "one scale 2^-{} in {} bits (their negative inputs give 0); more bits "
                                          "(--numParamBits, up to 12) may keep them", n.name, lost, C, first_lost, qs, o_.param_bits));
    Code cx = codesOf(x.id);
    const ir::Value& y = g_.value(n.outputs[0]);
    pw::OutSpec spec = newSlot(y.name, true);
    pw::Table t;
    t.in_slots = {cx.slot};
    t.out = spec;
    t.qw = qs;
    const ir::ValueId sc = g_.addConstant(g_.uniqueValueName(sv.name + "/p2"), std::move(codes)).id;
    replaceOutput(n, addIntegerLayer("P2PRelu", n.name, {cx.codes, sc}, y, t, {}, {n.name, "prelu", qs, 0, ""}));
    return "";
  }

  std::string addOp(ir::Node& n) {
    const ir::Value &a = g_.value(n.inputs[0]), &b = g_.value(n.inputs[1]);
    if (!isFloat32(a.id) || !isFloat32(b.id) || !a.type.isStatic() || a.type.shape != b.type.shape)
      return "an Add of two float32 tensors of one shape only";
    if (!hasCodes(a.id) && !hasCodes(b.id)) return "neither operand is held as codes";
    // A Relu that alone reads the sum is fused (a residual block's last activation).
    const auto uses = g_.uses();
    ir::Node* relu = nullptr;
    auto u = uses.find(n.outputs[0]);
    const bool output = std::find(g_.outputs().begin(), g_.outputs().end(), n.outputs[0]) != g_.outputs().end();
    if (!output && u != uses.end() && u->second.size() == 1) {
      ir::Node& r = g_.node(u->second[0].first);
      if (r.domain.empty() && r.op == "Relu" && !o_.keep_float.count(r.name)) relu = &r;
    }
    Code ca = codesOf(a.id), cb = codesOf(b.id);
    const ir::Value& y = g_.value(relu ? relu->outputs[0] : n.outputs[0]);
    pw::OutSpec spec = newSlot(y.name, relu == nullptr);
    if (relu) spec.act = pw::Act::kRelu;
    pw::Table t;
    t.in_slots = {ca.slot, cb.slot};
    t.out = spec;
    const Code cy = addIntegerLayer("P2Add", n.name, {ca.codes, cb.codes}, y, t, {}, {n.name, "add", 0, 0, ""});
    if (relu) {
      g_.removeNode(n.id);
      replaceOutput(*relu, cy);
    } else {
      replaceOutput(n, cy);
    }
    return "";
  }

  std::string gap(ir::Node& n) {
    const ir::Value& x = g_.value(n.inputs[0]);
    if (!isFloat32(x.id) || !x.type.isStatic() || x.type.shape.size() < 3) return "float32 input of static shape needed";
    if (!hasCodes(x.id)) return "its input is not held as codes";
    Code cx = codesOf(x.id);
    const ir::Value& y = g_.value(n.outputs[0]);
    pw::OutSpec spec = newSlot(y.name, cx.is_signed);
    pw::Table t;
    t.in_slots = {cx.slot};
    t.out = spec;
    replaceOutput(n, addIntegerLayer("P2GlobalAvgPool", n.name, {cx.codes}, y, t, {}, {n.name, "global_avg_pool", 0, 0, ""}));
    return "";
  }

  /// A Concat whose inputs have codes (or get them): one slot for the result, each input brought to the finest q.
  std::string concatOp(ir::Node& n) {
    const ops::OpSchema* schema = ops::findSchema("ai.npuc", "P2Concat");
    if (n.numInputs() > schema->max_inputs) return fmt::format("a Concat of more than {} inputs", schema->max_inputs);
    const ir::Value& y = g_.value(n.outputs[0]);
    if (!y.type.isStatic()) return "output of static shape needed";
    bool any = false;
    for (ir::ValueId v : n.inputs) {
      if (!isFloat32(v) || !g_.value(v).type.isStatic()) return "float32 inputs of static shape needed";
      any |= hasCodes(v);
    }
    if (!any) return "no input is held as codes";
    pw::Table t;
    std::vector<ir::ValueId> ins;
    for (ir::ValueId v : n.inputs) {
      Code c = codesOf(v);
      t.in_slots.push_back(c.slot);
      ins.push_back(c.codes);
    }
    // (signed as a tensor quantized from float is: where its calibrated range has a negative value — the codes the float
    // layer between conversions gives)
    std::string warning;
    const bool is_signed = rangeOfTensor(y.name, &warning).first < 0;
    t.out = newSlot(y.name, is_signed);
    replaceOutput(n, addIntegerLayer("P2Concat", n.name, ins, y, t, {{"axis", ir::Attr(n.attrInt("axis", 0))}},
                                     {n.name, "concat", 0, 0, ""}));
    return "";
  }

  /// A 2-D AveragePool whose windows share one divisor: the exact window sums, divided in the requantization.
  std::string avgPoolOp(ir::Node& n) {
    const ir::Value& x = g_.value(n.inputs[0]);
    const ir::Value& y = g_.value(n.outputs[0]);
    if (!isFloat32(x.id) || !x.type.isStatic() || x.type.shape.size() != 4 || !y.type.isStatic())
      return "a 2-D pooling of a float32 input of static shape needed";
    if (!hasCodes(x.id)) return "its input is not held as codes";
    kernels::Pool2dShape s = engine::pool2dShape(ops::resolvePoolWindow(n, x.type.shape), x.type.shape[0] * x.type.shape[1]);
    s.count_include_pad = n.attrInt("count_include_pad", 0) != 0;
    if (pw::avgPoolDivisor(s) == 0)
      return "its windows' divisors differ (count_include_pad 0 with padding, or ceil_mode's partial windows): the "
             "int8-pow2 form divides every window by one count";
    Code cx = codesOf(x.id);
    pw::Table t;
    t.in_slots = {cx.slot};
    t.out = newSlot(y.name, cx.is_signed);
    replaceOutput(n, addIntegerLayer("P2AvgPool", n.name, {cx.codes}, y, t, n.attrs, {n.name, "avg_pool", 0, 0, ""}));
    return "";
  }

  /// Data movement on codes keeps its input's slot: max pooling, reshapes, slices, splits, transposes and the like
  /// output some of their input's numbers, in some order, so the codes are the same numbers.
  /// (Their other inputs — shapes, starts, sizes — are not data and stay as they are.)
  std::string moves(ir::Node& n) {
    const ir::ValueId x = n.inputs[0];
    if (!isFloat32(x) || !hasCodes(x)) return "its input is not held as codes";
    if (n.op == "MaxPool" && n.outputs.size() > 1 && n.outputs[1] != ir::kNoValue) return "the MaxPool indices output";
    if (n.op == "MaxPool" && n.hasAttr("pad_value")) {
      // (a zero Pad folded into a MaxPool: over unsigned codes — values of 0 and more — a padding value of 0 or less
      // never wins, so the integer max pool, whose padding never wins, is exact; unless a window lies wholly in the
      // padding, which gives the padding value)
      bool pad_wins = code_.at(x).is_signed || !(n.attrFloat("pad_value", 0.0f) <= 0.0f);
      const std::vector<int64_t> k = n.attrInts("kernel_shape"), p = n.attrInts("pads", {});
      for (size_t i = 0; i < p.size(); ++i) pad_wins = pad_wins || k.empty() || p[i] >= k[i % k.size()];
      if (pad_wins) return "a MaxPool with a padding value";
    }
    for (ir::ValueId o : n.outputs) {  // (checked before the graph changes: a layer left float is left as it was)
      if (o == ir::kNoValue) return "an output left out";
      if (!g_.value(o).type.isStatic()) return "output of static shape needed";
    }
    Code cx = code_.at(x);
    std::vector<ir::ValueId> outs;
    std::vector<Code> codes;
    for (ir::ValueId o : n.outputs) {
      const ir::Value& y = g_.value(o);
      codes.push_back(Code{newCodes(y.name, y.type.shape, cx.is_signed), cx.slot, cx.is_signed, false});
      outs.push_back(codes.back().codes);
    }
    std::vector<ir::ValueId> ins = n.inputs;
    ins[0] = cx.codes;
    const std::vector<ir::ValueId> old = n.outputs;
    ir::Node& p = g_.addNode(n.op, n.name, ins, outs, n.domain);
    p.attrs = n.attrs;
    if (n.op == "MaxPool") p.attrs.erase("pad_value");
    ++rep_.integer_layers;
    rep_.layers.push_back({n.name, "moves", 0, 0, ""});
    for (size_t i = 0; i < old.size(); ++i) code_[old[i]] = Code{codes[i].codes, codes[i].slot, codes[i].is_signed, true};
    g_.removeNode(n.id);
    return "";
  }

  /// A constant Pad of zeros moves codes (code 0 stands for 0 at every scale, signed or not); its value input, a float
  /// 0 the codes cannot take, is left out (ONNX's default: 0). Another mode or value stays in float.
  std::string padOp(ir::Node& n) {
    if (n.attrString("mode", "constant") != "constant") return "a " + n.attrString("mode", "constant") + " Pad";
    if (n.attrFloat("value", 0.0f) != 0.0f) return "a Pad of another value than 0";
    if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) {
      const ir::Value& v = g_.value(n.inputs[2]);
      if (!v.constant || v.constant->dtype() != DType::kF32) return "a Pad value the model computes";
      for (int64_t i = 0; i < v.constant->numel(); ++i)
        if (v.constant->data<float>()[i] != 0.0f) return "a Pad of another value than 0";
    }
    if (n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue && !g_.value(n.inputs[1]).constant) return "pads the model computes";
    const ir::Node before = n;  // (a Pad left in float is left as it was: its -0 value, its value input)
    if (n.hasAttr("value")) n.attrs["value"] = ir::Attr(0.0f);  // (opset 10's; -0 made +0: the codes' 0 either way)
    if (n.inputs.size() > 2) n.inputs[2] = ir::kNoValue;
    const std::string why = moves(n);
    if (!why.empty()) n.attrs = before.attrs, n.inputs = before.inputs;
    return why;
  }

  /// ArgMax of codes: one scale for the whole tensor, so the largest code is the largest value (distinct codes stand
  /// for distinct values), the same index, ties included. Its output is the model's own (int64 indices).
  std::string argMaxOp(ir::Node& n) {
    const ir::ValueId x = n.inputs[0];
    if (!isFloat32(x) || !hasCodes(x)) return "its input is not held as codes";
    const std::vector<ir::ValueId> ins = {code_.at(x).codes}, outs = n.outputs;
    const ir::NodeId old = n.id;
    const std::string name = n.name;
    const auto attrs = n.attrs;
    g_.removeNode(old);
    g_.addNode("ArgMax", name, ins, outs).attrs = attrs;
    ++rep_.integer_layers;
    rep_.layers.push_back({name, "argmax", 0, 0, ""});
    return "";
  }

  /// A Resize that interpolates (linear, cubic; not tf_crop_and_resize), of rank 4 at most, its roi / scales / sizes
  /// constants: the codes' integer-weighted sums (kernels::pow2::resizeAcc), requantized into the output's slot.
  std::string resizeOp(ir::Node& n) {
    if (n.attrString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") return "a tf_crop_and_resize Resize";
    if (n.attrInt("antialias", 0) != 0) return "an antialiased Resize";
    if (n.attrString("mode", "nearest") == "cubic" && !(std::fabs(n.attrFloat("cubic_coeff_a", -0.75f)) <= 1.0f))
      return "a cubic Resize with |cubic_coeff_a| above 1";
    const ir::ValueId x = n.inputs[0];
    const ir::Value& y = g_.value(n.outputs[0]);
    if (!isFloat32(x) || !g_.value(x).type.isStatic() || !y.type.isStatic() || g_.value(x).type.shape.size() > 4)
      return "a float32 input of static shape and rank 4 at most needed";
    for (int i = 1; i < n.numInputs(); ++i)
      if (n.hasInput(i) && !g_.value(n.inputs[static_cast<size_t>(i)]).isConstant()) return "roi, scales or sizes computed by the model";
    if (!hasCodes(x)) return "its input is not held as codes";
    Code cx = codesOf(x);
    std::string warning;
    const bool is_signed = cx.is_signed || rangeOfTensor(y.name, &warning).first < 0;  // (cubic taps overshoot)
    pw::Table t;
    t.in_slots = {cx.slot};
    t.out = newSlot(y.name, is_signed);
    std::vector<ir::ValueId> ins = n.inputs;
    ins[0] = cx.codes;
    std::map<std::string, ir::Attr> attrs = n.attrs;
    if (n.op == "Upsample") attrs["upsample"] = ir::Attr(int64_t{1});
    attrs["output_shape"] = ir::Attr(y.type.shape);
    replaceOutput(n, addIntegerLayer("P2Resize", n.name, ins, y, t, std::move(attrs), {n.name, "resize", 0, 0, ""}));
    return "";
  }

  /// Softmax of codes into one byte per class (TIDL's classification output, T:L498): uint8 probabilities at the
  /// fixed 2^-8 (kernels::pow2::softmax), whatever the input's q.
  std::string softmaxOp(ir::Node& n) {
    const ir::ValueId x = n.inputs[0];
    if (!isFloat32(x) || !g_.value(x).type.isStatic() || g_.value(x).type.shape.empty())
      return "a float32 input of static shape needed";
    if (!hasCodes(x)) return "its input is not held as codes";
    const int64_t r = static_cast<int64_t>(g_.value(x).type.shape.size());
    int64_t axis = n.attrInt("axis", g_.opset < 13 ? 1 : -1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return "its axis is out of range";
    if (g_.opset < 13 && axis != r - 1)
      return "before opset 13 a Softmax runs over every dim from `axis` on; the int8-pow2 form takes one axis (the last there)";
    Code cx = codesOf(x);
    const ir::Value& y = g_.value(n.outputs[0]);
    pw::Table t;
    t.in_slots = {cx.slot};
    t.out = newSlot(y.name, false, pw::kSoftmaxQ);
    replaceOutput(n, addIntegerLayer("P2Softmax", n.name, {cx.codes}, y, t, {{"axis", ir::Attr(axis)}}, {n.name, "softmax", 0, 0, ""}));
    return "";
  }

  /// Every float tensor whose producer became an integer layer and that something still reads as float (a float
  /// layer, a graph output) is made again by a P2Dequantize of its codes, under its own name.
  void finishOutputs() {
    const auto uses = g_.uses();
    for (auto& [v, c] : code_) {
      if (!c.replaced) continue;
      const bool output = std::find(g_.outputs().begin(), g_.outputs().end(), v) != g_.outputs().end();
      auto u = uses.find(v);
      if (!output && (u == uses.end() || u->second.empty())) continue;
      pw::Table t;
      t.in_slots = {c.slot};
      ir::Node& d = g_.addNode("P2Dequantize", g_.uniqueValueName(g_.value(v).name + "/p2_dequantize"), {c.codes}, {v}, "ai.npuc");
      d.attrs["table"] = ir::Attr(tableInts(t));
    }
  }
};

}  // namespace

Pow2Report quantizeToPow2(ir::Graph& g, const std::map<std::string, TensorStats>& stats, const Pow2Options& o) {
  return Pow2Builder(g, stats, o).run();
}

int weightQ(double wmax, int param_bits) { return qForMagnitude(wmax, paramLimit(param_bits)); }

}  // namespace npuc::quant
