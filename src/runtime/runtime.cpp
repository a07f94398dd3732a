// The simulated device (docs/simulator.md): memory is exactly the address map's element spaces; the package's
// images (weights, parameters, library table, descriptor streams) are loaded at their addresses; descriptors run
// in program order on their engine's kernels.
//
// Numerics (the specification is the scalar reference kernel of each layer kind):
//   fp32 packages: float32 storage and arithmetic.
//   fp16 packages: float16 storage; each layer widens its float16 inputs to float32 (exact), computes in float32
//                  exactly as the fp32 layer does (same reduction order), applies its fused activation, and rounds
//                  each output element to float16 once (round to nearest even). Weights are float16, biases and
//                  channel scale/shift float32. Data-movement layers copy bits.
// --exact runs conv_ref / sgemm_ref; the default runs the packed SIMD kernels on the runtime's threads. Both give
// the same bits (tests/runtime).
#include "npuc/runtime.hpp"

#include "kernels/conv.hpp"
#include "kernels/convert.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layers.hpp"
#include "kernels/quant.hpp"
#include "kernels/pow2.hpp"
#include "kernels/aipp.hpp"
#include "kernels/prepost.hpp"
#include "package/gears.hpp"
#include "package/package.hpp"
#include "plugin/plugin.hpp"
#include "support/error.hpp"
#include "support/fp16.hpp"
#include "support/thread_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

namespace npuc {

namespace {

using package::ElemType;
using package::LayerKind;

Shape shapeOf(const package::TensorRef& r) {
  Shape s;
  for (int i = 0; i < r.rank; ++i) s.push_back(r.dims[static_cast<size_t>(i)]);
  return s;
}

kernels::Activation actOf(const package::Descriptor& d) {
  kernels::Activation a;
  switch (d.act) {
    case package::Act::kNone: break;
    case package::Act::kRelu: a.kind = kernels::ActKind::kRelu; break;
    case package::Act::kClip: a.kind = kernels::ActKind::kClip; a.a = d.act_a; a.b = d.act_b; break;
    case package::Act::kLeakyRelu: a.kind = kernels::ActKind::kLeakyRelu; a.a = d.act_a; break;
  }
  return a;
}

/// Parameter words [from, from + n) read as two's-complement 32-bit values (pads, starts, steps).
std::vector<int64_t> signedWords(const std::vector<uint32_t>& p, size_t from, size_t n) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(p[from + i]);
  return v;
}

struct Space {
  std::string name;
  uint64_t addr = 0, size = 0;
  std::shared_ptr<Buffer> buf;
};

}  // namespace

struct Runtime::Impl {
  RuntimeOptions opts;
  package::Package pkg;
  std::string numerics;       // the name of pkg.numerics (numerics() returns a reference)
  std::vector<Space> spaces;  // by address
  std::unique_ptr<ThreadPool> pool;  // the runtime's own, opts.threads (exact mode too: its kernels split outputs only)
  std::vector<RuntimeTensor> inputs, outputs;
  std::vector<RuntimeLayer> layers;
  std::vector<const package::Descriptor*> program;  // by seq

  struct Step {
    const package::Descriptor* d = nullptr;
    std::vector<uint8_t*> in;
    uint8_t* out = nullptr;
    std::vector<uint32_t> p;
    kernels::Activation act;
    bool post_act = false;  // activation applied when storing (kinds whose kernel has no epilogue)
    std::vector<float> w32;  // float16 weights widened once
    std::vector<float> coef;  // normalize: add[C] then mul[C]
    const float* w = nullptr;
    const float* bias = nullptr;
    std::unique_ptr<kernels::Conv> conv;
    std::unique_ptr<kernels::PackedA> packed_w;  // gemm: w [N, K] packed as the left operand of y^T = w x^T
    kernels::ConvShape cs;
    kernels::ConvTransposeShape ts;
    kernels::Pool2dShape ps;
    kernels::MatMulBatches mm;  // matmul: the operands' batches
    std::vector<Shape> shapes;  // of the references
    std::unique_ptr<kernels::QConv> qconv;  // conv in its int8 form (int8-affine): the int8 weights packed once
    bool int8 = false;                       // binary (an addition, with qadd), matmul (qmm), global_avg_pool (qgap) or avg_pool (qavg) in its int8 form
    kernels::QAddParams qadd;
    kernels::QMatMulParams qmm;  // matmul in its int8 form
    kernels::QGlobalAvgPoolParams qgap;
    kernels::QAvgPoolParams qavg;  // avg_pool in its int8 form
    std::unique_ptr<plugin::Instance> custom;  // a custom layer: its plugin op, parameters and state
    std::vector<DType> custom_in;              // the type each input passes to the plugin as
    std::vector<DType> custom_out;             // the type the plugin writes each output in
    std::optional<kernels::pow2::Table> p2;    // a layer in its int8-pow2 form: its table (slots, activation, q's)
    kernels::pow2::PackedWeights p2_w;         // its conv / gemm weights packed once for fast mode's VNNI form
    bool p2_codes = false;                     // max pooling on int8-pow2 codes (no table: the input's slot)
    int64_t aipp_stride = 0;  // a dynamic AIPP stage given a frame smaller than max_src_image_size: its bytes per image
  };
  std::vector<Step> steps;  // by seq

  // A package with gears: this Impl holds one program (an Impl) per gear and forwards to the selected one, `cur`;
  // for an ordinary package cur is this.
  std::vector<std::unique_ptr<Impl>> gear_programs;
  std::vector<RuntimeGear> gears;
  std::string gear_kind, gear_input;
  Impl* cur = this;
  std::vector<double> times;
  std::vector<std::vector<float>> scratch;  // per input slot, plus one for the output (fp16 packages)
  std::vector<float> gemm_t;                // transposed gemm result (M > 1)
  std::vector<kernels::pow2::Slot> p2_slots;  // int8-pow2: each slot's q and range history (the package's state)
  std::vector<int> p2_out_slot;               // int8-pow2: by seq, the slot of the layer's output codes (-1: none)
  std::vector<int64_t> p2_acc;                // int8-pow2: a layer's accumulators
  std::vector<int32_t> p2_acc32;              // (fast mode, where they fit in int32)
  int only_group = 0;                         // > 0: run only the layers of this group (a Pipeline stage)
  std::vector<char> input_set;                // by inputs(): set since the package was loaded (run refuses before)
  bool check_inputs = true;                   // false: a later Pipeline stage (its inputs come from the one before)

  /// Marks input `i` set (setInput, setImageInput, setDynamicAipp write it).
  void markSet(size_t i) {
    if (input_set.size() != inputs.size()) input_set.assign(inputs.size(), 0);
    input_set[i] = 1;
  }
  /// Marks the input stored at `dst` set (a dynamic AIPP parameter block, written in place).
  void markWritten(const uint8_t* dst) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (at(inputs[i].address, 1, "input " + inputs[i].name) == dst) markSet(i);
  }
  /// run(): every input set at least once since loading (the device keeps what was set; never-set memory is not an
  /// input), else kInvalidArgument naming those that were not.
  void checkInputsSet() const {
    if (!check_inputs) return;
    std::string missing;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (i >= input_set.size() || !input_set[i]) missing += (missing.empty() ? "'" : ", '") + inputs[i].name + "'";
    if (!missing.empty())
      fail(ErrorCode::kInvalidArgument, "input {} never set: set every input of the package before running it (inputs: {})",
           missing, [&] {
             std::string all;
             for (auto& r : inputs) all += (all.empty() ? "" : ", ") + r.name;
             return all;
           }());
  }

  /// int8-pow2: every slot back to its calibrated range (as loaded; Runtime::resetState).
  void resetPow2() {
    if (!pkg.pow2) return;
    p2_slots.assign(pkg.pow2->slots, {});
    for (const Step& s : steps)
      if (s.p2 && s.p2->out.slot >= 0) p2_slots[static_cast<size_t>(s.p2->out.slot)] = kernels::pow2::makeSlot(s.p2->out, pkg.pow2->options);
  }

  /// The int8-pow2 form of a layer, if it is one: its table read once (the reader validated it).
  bool preparePow2(Step& s) {
    const package::Descriptor& d = *s.d;
    const package::Pow2Form form = package::pow2Form(pkg.numerics, d);
    if (form == package::Pow2Form::kCodes) {
      s.p2_codes = true;
      return false;  // the pool's geometry is prepared as for the float form
    }
    if (form == package::Pow2Form::kNone) return false;
    const package::TensorRef& tab = d.in(d.n_in - 1);
    kernels::pow2::Table t;
    std::string why = kernels::pow2::decodeTable(reinterpret_cast<const int32_t*>(s.in.back()), tab.dims[0], &t);
    if (!why.empty()) fault(fmt::format("seq {}: int8-pow2 table: {}", d.seq, why));
    s.p2 = t;
    if (d.kind == LayerKind::kConv) windowShape(s, s.cs);
    if (d.kind == LayerKind::kAvgPool) s.ps = package::poolShapeOf(*s.d, s.p);
    if (d.kind == LayerKind::kGemm) {  // y [M, N] = x [M, K] w [N, K]^T: a 1x1 convolution over a batch of M
      const Shape &x = s.shapes[0], &w = s.shapes[1];
      s.cs.batch = x[0];
      s.cs.in_channels = x[1];
      s.cs.out_channels = w[0];
      s.cs.groups = 1;
      s.cs.in_spatial = s.cs.out_spatial = s.cs.kernel = s.cs.stride = s.cs.dilation = {1, 1};
      s.cs.pad_begin = {0, 0};
    }
    if ((d.kind == LayerKind::kConv || d.kind == LayerKind::kGemm) && !opts.exact)
      s.p2_w = kernels::pow2::packWeights(s.cs, reinterpret_cast<const int16_t*>(s.in[1]));
    return true;
  }

  void execPow2(Step& s) {
    namespace pw = kernels::pow2;
    const package::Descriptor& d = *s.d;
    const pw::Table& t = *s.p2;
    const pw::Options& o = pkg.pow2->options;
    auto codes = [&](int i) {
      return pw::Codes{s.in[static_cast<size_t>(i)], d.in(i).type == ElemType::kI8, p2_slots[static_cast<size_t>(t.in_slots[static_cast<size_t>(i)])].q};
    };
    pw::Slot* out = t.out.slot >= 0 ? &p2_slots[static_cast<size_t>(t.out.slot)] : nullptr;
    const int64_t n = static_cast<int64_t>(d.out(0).numel());
    switch (d.kind) {
      case LayerKind::kQuantize: {
        const auto* x = reinterpret_cast<const float*>(s.in[0]);
        opts.exact ? pw::quantize(x, n, t.out, *out, o, s.out) : pw::quantizeFast(x, n, t.out, *out, o, s.out);
        return;
      }
      case LayerKind::kDequantize:
        (opts.exact ? pw::dequantize : pw::dequantizeFast)(codes(0), n, reinterpret_cast<float*>(s.out));
        return;
      case LayerKind::kBinary: (opts.exact ? pw::add : pw::addFast)(codes(0), codes(1), n, t.out, *out, o, s.out, p2_acc); return;
      case LayerKind::kConcat: {
        const size_t axis = s.p[0], k_in = t.in_slots.size();
        const Shape& y = s.shapes.back();
        int64_t outer = 1, inner = 1;
        for (size_t i = 0; i < axis; ++i) outer *= y[i];
        for (size_t i = axis + 1; i < y.size(); ++i) inner *= y[i];
        std::vector<pw::Codes> ins;
        std::vector<int64_t> chunks;
        for (size_t k = 0; k < k_in; ++k) {
          ins.push_back(codes(static_cast<int>(k)));
          chunks.push_back(s.shapes[k][axis] * inner);
        }
        opts.exact ? pw::concat(ins, chunks, outer, t.out, *out, o, s.out, p2_acc)
                   : pw::concatFast(ins, chunks, outer, t.out, *out, o, s.out, p2_acc, p2_acc32);
        return;
      }
      case LayerKind::kAvgPool: pw::avgPool(s.ps, codes(0), t.out, *out, o, s.out, p2_acc); return;
      case LayerKind::kGlobalAvgPool: {
        const Shape& x = s.shapes[0];
        const int64_t planes = x[0] * x[1], size = planes ? shapeNumel(x) / planes : 0;
        pw::globalAvgPool(codes(0), planes, size, t.out, *out, o, s.out, p2_acc);
        return;
      }
      default: {  // conv, gemm
        const pw::Codes x = codes(0);
        // --exact: the portable plane sums (one C++ source built for the baseline and for AVX2, as int8-affine's
        // QConvPath::kBaseline; convAcc's integers by test — convAcc itself, a loop per output and tap, takes half a
        // minute a ResNet-50 frame); fast: the same integers in int32 on AVX-512 VNNI where the layer allows it.
        const auto* w = reinterpret_cast<const int16_t*>(s.in[1]);
        const auto* b = reinterpret_cast<const int32_t*>(s.in[2]);
        if (!opts.exact) {
          pw::convFinishFast(s.cs, x, w, s.p2_w, t.qw, b, t.qb, t.out, *out, o, s.out, p2_acc, p2_acc32, pool.get());
          return;
        }
        p2_acc.resize(static_cast<size_t>(n));
        pw::convAccFast(s.cs, x, w, t.qw, b, t.qb, o.round_add, p2_acc.data(), pool.get(), pw::bestPow2Path());
        pw::finish(p2_acc.data(), n, x.q + t.qw, 1, t.out, *out, o, s.out);
        return;
      }
    }
  }

  [[noreturn]] void fault(const std::string& msg) const { fail(ErrorCode::kInvalidInput, "device fault: {}", msg); }

  uint8_t* at(uint64_t addr, uint64_t bytes, const std::string& what) {
    for (auto& s : spaces)
      if (addr >= s.addr && bytes <= s.size && addr - s.addr <= s.size - bytes) return s.buf->data() + (addr - s.addr);
    fault(fmt::format("{}: access [0x{:x}, +{}) is outside the address map", what, addr, bytes));
  }
  Space& space(const std::string& name) {
    for (auto& s : spaces)
      if (s.name == name) return s;
    fault("no element space '" + name + "'");
  }
  void load(const std::string& name, const std::vector<uint8_t>& image) {
    Space& s = space(name);
    if (image.size() > s.size) fault(fmt::format("image of {} bytes does not fit '{}'", image.size(), name));
    if (!image.empty()) std::memcpy(s.buf->data(), image.data(), image.size());
  }

  void prepare() {
    for (auto& ss : pkg.address_map)
      for (auto& e : ss.elements) spaces.push_back({e.name, e.addr, e.size, Buffer::allocate(std::max<uint64_t>(e.size, 1))});
    std::sort(spaces.begin(), spaces.end(), [](const Space& a, const Space& b) { return a.addr < b.addr; });
    load("weight", pkg.weights);
    load("drp_param", pkg.params);
    load("drp_config", package::encodeLibraries(pkg.libraries));
    load("desc_aimac", package::encodeDescriptors(pkg.mac, package::Engine::kMac));
    load("desc_drp", package::encodeDescriptors(pkg.vec, package::Engine::kVector));

    for (auto& t : pkg.inputs)
      inputs.push_back({t.name, t.ref.type, shapeOf(t.ref), t.ref.addr, {t.image.format, t.image.height, t.image.width, t.image.chw}, {}});
    for (auto& t : pkg.outputs) outputs.push_back({t.name, t.ref.type, shapeOf(t.ref), t.ref.addr, {}, {}});
    // Parameter inputs of dynamic AIPP stages name the frame input they configure.
    for (const package::Descriptor& d : pkg.vec)
      if (d.kind == LayerKind::kAipp && d.n_in == 2) {
        auto frame = std::find_if(inputs.begin(), inputs.end(), [&](const RuntimeTensor& r) { return r.address == d.in(0).addr; });
        for (RuntimeTensor& r : inputs)
          if (r.address == d.in(1).addr && frame != inputs.end()) r.aipp_for = frame->name;
      }
    program.resize(pkg.mac.size() + pkg.vec.size());
    for (auto* s : {&pkg.mac, &pkg.vec})
      for (auto& d : *s) program[d.seq] = &d;
    // The value starting at each address as program order goes: the package inputs first, then each layer's output
    // (memory reused by liveness holds several values over time: a layer reads the latest written before it). An
    // input range may hold several values end to end (a Concat done in place: its slabs' layers wrote them).
    std::map<uint32_t, std::string> holds;
    auto write = [&](const package::TensorRef& r, const std::string& name) {
      holds.erase(holds.lower_bound(r.addr), holds.lower_bound(static_cast<uint32_t>(std::min<uint64_t>(uint64_t{r.addr} + r.bytes, UINT32_MAX))));
      holds[r.addr] = name;
    };
    for (auto& t : pkg.inputs) write(t.ref, t.name);
    for (auto& l : pkg.layers) {
      const package::Descriptor& d = *program[l.seq];
      RuntimeLayer rl;
      for (int i = 0; i < d.n_in; ++i)
        for (auto it = holds.lower_bound(d.in(i).addr); it != holds.end() && uint64_t{it->first} < uint64_t{d.in(i).addr} + d.in(i).bytes; ++it)
          if (std::find(rl.inputs.begin(), rl.inputs.end(), it->second) == rl.inputs.end()) rl.inputs.push_back(it->second);
      write(d.out(0), l.output);
      for (int k = 1; k < d.n_out && static_cast<size_t>(k) <= l.extra_outputs.size(); ++k)
        write(d.out(k), l.extra_outputs[static_cast<size_t>(k - 1)]);
      rl.seq = static_cast<int>(l.seq);
      rl.engine = package::engineName(l.engine);
      rl.index = static_cast<int>(l.index);
      rl.kind = package::layerKindName(d.kind);
      rl.name = l.name;
      rl.opexp = l.opexp;
      rl.onnx_nodes = l.onnx_nodes;
      rl.scale = l.scale;
      rl.zero_point = l.zero_point;
      rl.float_value = l.float_value;
      rl.group = static_cast<int>(l.group);
      rl.output = {l.output, d.out(0).type, shapeOf(d.out(0)), d.out(0).addr, {}, {}};
      for (int k = 1; k < d.n_out && static_cast<size_t>(k) <= l.extra_outputs.size(); ++k)
        rl.more_outputs.push_back({l.extra_outputs[static_cast<size_t>(k - 1)], d.out(k).type, shapeOf(d.out(k)), d.out(k).addr, {}, {}});
      layers.push_back(std::move(rl));
    }
    for (const package::Descriptor* d : program) steps.push_back(prepareStep(*d));
    scratch.assign(package::kMaxRefs, {});
    resetPow2();
    // int8-pow2: the slot whose q each layer's codes are at — its table's output slot, or for a layer on codes without
    // a table (max pooling, data movement) the slot of the codes it reads (the last writer of that address before it).
    p2_out_slot.assign(steps.size(), -1);
    if (pkg.pow2) {
      std::map<uint32_t, int> slot_at;  // address -> the slot of the codes last written there (-1: not codes)
      for (const Step& st : steps) {
        const package::Descriptor& d = *st.d;
        int slot = -1;  // (-1 too for a float output: a dequantize)
        const bool codes = d.out(0).type == ElemType::kI8 || d.out(0).type == ElemType::kU8;
        if (codes && st.p2) slot = st.p2->out.slot;
        else if (auto it = codes && d.n_in >= 1 ? slot_at.find(d.in(0).addr) : slot_at.end(); it != slot_at.end()) slot = it->second;
        p2_out_slot[d.seq] = slot;
        slot_at[d.out(0).addr] = slot;
      }
    }
  }

  /// ConvShape / ConvTransposeShape of a conv descriptor: dims from its references, the window from its parameters
  /// (g kh kw sh sw dh dw pt pl).
  template <class Shape2d>
  static void windowShape(const Step& s, Shape2d& w) {
    const Shape &x = s.shapes[0], &y = s.shapes.back();
    auto si = [&](size_t i) { return static_cast<int64_t>(static_cast<int32_t>(s.p[i])); };
    w.batch = x[0];
    w.in_channels = x[1];
    w.out_channels = y[1];
    w.groups = si(0);
    w.in_spatial = {x[2], x[3]};
    w.out_spatial = {y[2], y[3]};
    w.kernel = {si(1), si(2)};
    w.stride = {si(3), si(4)};
    w.dilation = {si(5), si(6)};
    w.pad_begin = {si(7), si(8)};
  }

  Step prepareStep(const package::Descriptor& d) {
    Step s;
    s.d = &d;
    std::string what = fmt::format("descriptor seq {} ({})", d.seq, package::layerKindName(d.kind));
    for (int i = 0; i < d.n_in; ++i) s.in.push_back(at(d.in(i).addr, d.in(i).bytes, what));
    s.out = at(d.out(0).addr, d.out(0).bytes, what);
    for (int i = 0; i < d.n_in + d.n_out; ++i) s.shapes.push_back(shapeOf(d.refs[static_cast<size_t>(i)]));
    s.p = package::paramWords(pkg, d);
    s.act = actOf(d);
    if (preparePow2(s)) return s;
    auto weights = [&](int i) -> const float* {
      const package::TensorRef& r = d.in(i);
      if (r.type == ElemType::kF32) return reinterpret_cast<const float*>(s.in[static_cast<size_t>(i)]);
      s.w32.resize(r.numel());
      kernels::f16ToF32_ref(reinterpret_cast<const uint16_t*>(s.in[static_cast<size_t>(i)]), s.w32.data(), static_cast<int64_t>(r.numel()));
      return s.w32.data();
    };
    switch (d.kind) {
      case LayerKind::kCustom: prepareCustom(s); break;
      case LayerKind::kConv: {
        windowShape(s, s.cs);
        if (d.in(0).type == ElemType::kI8) {  // the int8 form: the requantization table (validated) read once
          const int32_t* t = reinterpret_cast<const int32_t*>(s.in[3]);
          kernels::QOutput q;
          q.zero_point = t[1];
          q.lo = t[2];
          q.hi = t[3];
          for (int64_t m = 0; m < s.cs.out_channels; ++m) q.multiplier.push_back({t[4 + 2 * m], t[5 + 2 * m]});
          // (weights and bias are package constants: they outlive the step) --exact runs the portable path: plain
          // C++ loops without intrinsics over the same integers (qconv_ref's bytes, tested on every path); fast
          // mode the widest path the CPU has.
          s.qconv = std::make_unique<kernels::QConv>(s.cs, reinterpret_cast<const int8_t*>(s.in[1]),
                                                     reinterpret_cast<const int32_t*>(s.in[2]), t[0], std::move(q),
                                                     opts.exact ? kernels::QConvPath::kBaseline : kernels::bestQConvPath());
          break;
        }
        s.w = weights(1);
        if (d.n_in > 2) s.bias = reinterpret_cast<const float*>(s.in[2]);
        if (!opts.exact) s.conv = std::make_unique<kernels::Conv>(s.cs, s.w, s.bias, s.act);
        break;
      }
      case LayerKind::kConvTranspose: {
        windowShape(s, s.ts);
        s.w = weights(1);
        if (d.n_in > 2) s.bias = reinterpret_cast<const float*>(s.in[2]);
        s.post_act = true;
        break;
      }
      case LayerKind::kGemm:
        s.w = weights(1);
        if (d.n_in > 2) s.bias = reinterpret_cast<const float*>(s.in[2]);
        if (!opts.exact) s.packed_w = std::make_unique<kernels::PackedA>(s.shapes[1][0], s.shapes[1][1], s.w, s.shapes[1][1], false);
        break;
      case LayerKind::kMaxPool:
      case LayerKind::kAvgPool: {
        s.ps = package::poolShapeOf(*s.d, s.p);
        if (d.kind == LayerKind::kAvgPool && d.in(0).type == ElemType::kI8 && !s.p2) {  // the int8 form: its table (validated)
          s.int8 = true;
          const int32_t* t = reinterpret_cast<const int32_t*>(s.in[1]);
          s.qavg.zx = t[0], s.qavg.zy = t[1], s.qavg.lo = t[2], s.qavg.hi = t[3];
          for (int64_t k = 0; k < s.ps.kh * s.ps.kw; ++k) s.qavg.mul.push_back({t[4 + 2 * k], t[5 + 2 * k]});
        }
        s.post_act = true;
        break;
      }
      case LayerKind::kBinary:
        if (d.in(0).type == ElemType::kI8) {  // the int8 form: its requantization table (validated) read once
          s.int8 = true;
          const int32_t* t = reinterpret_cast<const int32_t*>(s.in[2]);
          s.qadd.za = t[0], s.qadd.zb = t[1], s.qadd.zy = t[2], s.qadd.lo = t[3], s.qadd.hi = t[4];
          s.qadd.ma = t[5], s.qadd.mb = t[6], s.qadd.shift = t[7];
        }
        break;
      case LayerKind::kGlobalAvgPool:
        if (d.in(0).type == ElemType::kI8 && !s.p2) {  // the int8 form: its table (validated) read once
          s.int8 = true;
          const int32_t* t = reinterpret_cast<const int32_t*>(s.in[1]);
          s.qgap.zx = t[0], s.qgap.zy = t[1], s.qgap.lo = t[2], s.qgap.hi = t[3];
          s.qgap.mul = {t[4], t[5]};
        }
        s.post_act = true;
        break;
      case LayerKind::kMatMul: {
        std::string why;
        if (!kernels::matmulBatches(s.shapes[0], s.shapes[1], s.shapes.back(), &s.mm, &why)) fault(what + ": " + why);
        if (d.in(0).type == ElemType::kI8) {  // the int8 form: its requantization table (validated) read once
          s.int8 = true;
          const int32_t* t = reinterpret_cast<const int32_t*>(s.in[2]);
          s.qmm.za = t[0], s.qmm.zb = t[1], s.qmm.zy = t[2], s.qmm.lo = t[3], s.qmm.hi = t[4];
          s.qmm.mul = {t[5], t[6]};
        }
        break;  // the activation is the product's epilogue
      }
      case LayerKind::kNormalize:
        for (size_t i = 1; i < s.p.size(); ++i) s.coef.push_back(package::paramFloat(s.p[i]));
        break;
      default: s.post_act = true; break;
    }
    return s;
  }

  static kernels::Storage storageOf(const package::TensorRef& r) {
    return r.type == ElemType::kF16 ? kernels::Storage::kF16 : kernels::Storage::kF32;
  }
  /// Whether the n_in inputs and the output of s are all float16.
  static bool elementwiseF16(const Step& s, int n_in) {
    for (int i = 0; i < n_in; ++i)
      if (s.d->in(i).type != ElemType::kF16) return false;
    return s.d->out(0).type == ElemType::kF16;
  }
  /// An elementwise layer over float16 storage (elementwiseF16): chunks of the n_in inputs widened into buffers on
  /// the stack, f(x, y, n) computes n float32 results (activation included), rounded into the output.
  template <class F>
  void chunked(Step& s, int n_in, const F& f) {
    constexpr int64_t kChunk = 2048;
    const int64_t n = static_cast<int64_t>(s.d->out(0).numel());
    auto body = [&](int64_t c0, int64_t c1) {
      float buf[3][kChunk];
      const float* x[2] = {buf[0], buf[1]};
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t b = c * kChunk, len = std::min(kChunk, n - b);
        for (int i = 0; i < n_in; ++i)
          kernels::f16ToF32(reinterpret_cast<const uint16_t*>(s.in[static_cast<size_t>(i)]) + b, buf[i], len, nullptr);
        f(x, buf[2], len);
        kernels::f32ToF16(buf[2], reinterpret_cast<uint16_t*>(s.out) + b, len, {}, nullptr);
      }
    };
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    if (pool->size() > 1 && chunks > 1)
      pool->parallelFor(chunks, body, std::max<int64_t>(1, chunks / (4 * pool->size())));
    else body(0, chunks);
  }
  const float* inF(Step& s, int i) {
    const package::TensorRef& r = s.d->in(i);
    if (r.type == ElemType::kF32) return reinterpret_cast<const float*>(s.in[static_cast<size_t>(i)]);
    auto& buf = scratch[static_cast<size_t>(i)];
    buf.resize(r.numel());
    const uint16_t* h = reinterpret_cast<const uint16_t*>(s.in[static_cast<size_t>(i)]);
    if (opts.exact) kernels::f16ToF32_ref(h, buf.data(), static_cast<int64_t>(r.numel()));
    else kernels::f16ToF32(h, buf.data(), static_cast<int64_t>(r.numel()), pool.get());
    return buf.data();
  }
  float* outF(Step& s) {
    const package::TensorRef& r = s.d->out(0);
    if (r.type == ElemType::kF32) return reinterpret_cast<float*>(s.out);
    auto& buf = scratch[package::kMaxRefs - 1];
    buf.resize(r.numel());
    return buf.data();
  }
  void store(Step& s) {
    const package::TensorRef& r = s.d->out(0);
    kernels::Activation act = s.post_act ? s.act : kernels::Activation{};
    int64_t n = static_cast<int64_t>(r.numel());
    if (r.type == ElemType::kF32) {
      if (act.kind != kernels::ActKind::kNone) {
        float* y = reinterpret_cast<float*>(s.out);
        for (int64_t i = 0; i < n; ++i) y[i] = kernels::applyActivation(y[i], act);
      }
      return;
    }
    const float* src = scratch[package::kMaxRefs - 1].data();
    if (opts.exact) kernels::f32ToF16_ref(src, reinterpret_cast<uint16_t*>(s.out), n, act);
    else kernels::f32ToF16(src, reinterpret_cast<uint16_t*>(s.out), n, act, pool.get());
  }

  /// What the translator fixed for the AIPP stage of step s: the output it writes, the frame's bytes per image,
  /// padding_value. Its parameter block is aippBlockSize(n) bytes. The bytes per image are the frame input's
  /// (max_src_image_size for a dynamic stage) or, with `given` and a smaller frame set (setInput), that frame's.
  static kernels::AippSetup aippSetup(const Step& s, bool given = true) {
    const Shape &xs = s.shapes[0], &ys = s.shapes.back();
    return {ys[0], ys[1], ys[2], ys[3], given && s.aipp_stride ? s.aipp_stride : xs[1], package::paramFloat(s.p[1])};
  }
  /// The dynamic AIPP stage that reads the frame input at `address`, if any.
  Step* dynamicAippStage(uint64_t address) {
    for (Step& s : steps)
      if (s.d->kind == LayerKind::kAipp && s.d->n_in == 2 && s.d->in(0).addr == address) return &s;
    return nullptr;
  }

  void execPrePost(Step& s) {
    const package::Descriptor& d = *s.d;
    const package::TensorRef &x = d.in(0), &y = d.out(0);
    const Shape &xs = s.shapes[0], &ys = s.shapes.back();
    auto u8in = [&] { return reinterpret_cast<const uint8_t*>(s.in[0]); };
    auto h16in = [&] { return reinterpret_cast<const uint16_t*>(s.in[0]); };
    int64_t n = static_cast<int64_t>(x.numel());
    switch (d.kind) {
      case LayerKind::kCast: {
        bool to16 = y.type == ElemType::kF16;
        if (x.type == ElemType::kU8) {
          if (to16) kernels::castAnyToFp16(n, u8in(), reinterpret_cast<uint16_t*>(s.out), pool.get());
          else kernels::castU8ToFp32(n, u8in(), reinterpret_cast<float*>(s.out), pool.get());
        } else if (x.type == ElemType::kF16) {
          kernels::castFp16ToFp32(n, h16in(), reinterpret_cast<float*>(s.out), pool.get());
        } else {
          kernels::castFp32ToFp16(n, reinterpret_cast<const float*>(s.in[0]), reinterpret_cast<uint16_t*>(s.out),
                                  pool.get());
        }
        return;
      }
      case LayerKind::kYuvToRgb:
        (opts.exact ? kernels::yuvToRgb : kernels::yuvToRgbFast)(static_cast<kernels::YuvFormat>(static_cast<int32_t>(s.p[0])),
                                                                 s.p[1] != 0, ys[0], ys[1], u8in(), s.out, pool.get());
        return;
      case LayerKind::kToGray:
        kernels::toGray(static_cast<kernels::GrayFormat>(static_cast<int32_t>(s.p[0])), ys[0], ys[1], u8in(), s.out, pool.get());
        return;
      case LayerKind::kCrop: {
        bool chw = s.p[0] == 1;
        kernels::CropGeometry g;
        g.height = chw ? xs[1] : xs[0];
        g.width = chw ? xs[2] : xs[1];
        g.channels = chw ? xs[0] : xs[2];
        g.pos_y = s.p[1];
        g.pos_x = s.p[2];
        g.out_height = ys[0];
        g.out_width = ys[1];
        kernels::crop(chw ? kernels::ImageLayout::kCHW : kernels::ImageLayout::kHWC, g, package::elemSize(x.type), s.in[0], s.out, pool.get());
        return;
      }
      case LayerKind::kResizeHwc: {
        kernels::ResizeGeometry g;
        g.in_height = xs[0];
        g.in_width = xs[1];
        g.channels = xs[2];
        g.out_height = ys[0];
        g.out_width = ys[1];
        auto alg = s.p[0] == 1 ? kernels::ResizeAlg::kBilinear : kernels::ResizeAlg::kNearest;
        if (x.type == ElemType::kU8 && opts.exact) kernels::resizeHwc(alg, g, u8in(), s.out, pool.get());
        else if (x.type == ElemType::kU8) kernels::resizeHwcFast(alg, g, u8in(), s.out, pool.get());
        else kernels::resizeHwc(alg, g, h16in(), reinterpret_cast<uint16_t*>(s.out), pool.get());
        return;
      }
      case LayerKind::kNormalize: {
        int64_t C = xs.back();
        const float* add = s.coef.data();
        const float* mul = add + C;
        uint16_t* out = reinterpret_cast<uint16_t*>(s.out);
        bool swap = s.p[0] != 0;
        auto run = [&](auto* src) {
          if (opts.exact) kernels::normalize(n / C, C, swap, add, mul, src, out, pool.get());
          else kernels::normalizeFast(n / C, C, swap, add, mul, src, out, pool.get());
        };
        if (x.type == ElemType::kU8) run(u8in());
        else run(h16in());
        return;
      }
      case LayerKind::kPostSoftmax:
        if (y.type == ElemType::kF32) kernels::softmaxFp16(n, h16in(), reinterpret_cast<float*>(s.out), pool.get());
        else kernels::softmaxFp16(n, h16in(), reinterpret_cast<uint16_t*>(s.out), pool.get());
        return;
      case LayerKind::kArgMinMax: {
        bool chw = s.p[0] == 1;
        int64_t H = chw ? xs[1] : xs[0], W = chw ? xs[2] : xs[1], C = chw ? xs[0] : xs[2];
        auto layout = chw ? kernels::ImageLayout::kCHW : kernels::ImageLayout::kHWC;
        auto axis = static_cast<kernels::ArgAxis>(s.p[1]);
        auto mode = s.p[2] == 1 ? kernels::ArgMode::kArgMin : kernels::ArgMode::kArgMax;
        if (y.type == ElemType::kU8) kernels::argMinMax(layout, H, W, C, axis, mode, h16in(), s.out, pool.get());
        else kernels::argMinMax(layout, H, W, C, axis, mode, h16in(), reinterpret_cast<uint16_t*>(s.out), pool.get());
        return;
      }
      case LayerKind::kAipp: {
        // A static stage's block is in its parameters, a dynamic stage's in its parameter input; the kernel checks
        // the block's rules on every inference (a static one was also checked when the package was read).
        const kernels::AippSetup st = aippSetup(s);
        const uint8_t* block = d.n_in == 2 ? s.in[1] : reinterpret_cast<const uint8_t*>(s.p.data() + 2);
        try {
          const kernels::AippParams ap = kernels::decodeAipp(block, kernels::aippBlockSize(st.n));
          if (y.type == ElemType::kF32) kernels::aipp(ap, st, u8in(), reinterpret_cast<float*>(s.out), pool.get());
          else kernels::aipp(ap, st, u8in(), reinterpret_cast<uint16_t*>(s.out), pool.get());
        } catch (const Error& e) {
          fail(ErrorCode::kInvalidInput, "layer '{}': AIPP parameter block refused: {}", pkg.layers[d.seq].name, e.what());
        }
        return;
      }
      default: fault(fmt::format("descriptor seq {}: layer kind {} has no kernel", d.seq, static_cast<int>(d.kind)));
    }
  }

  /// A view of the device memory a reference names (its bytes were checked to lie in one element space).
  Tensor viewOf(const package::TensorRef& r) {
    for (auto& sp : spaces)
      if (r.addr >= sp.addr && r.bytes <= sp.size && r.addr - sp.addr <= sp.size - r.bytes)
        return Tensor(r.type, shapeOf(r), sp.buf, r.addr - sp.addr);
    fault(fmt::format("access [0x{:x}, +{}) is outside the address map", r.addr, r.bytes));
  }

  /// A custom layer: its plugin found among the registered ones and checked against the package's record (the op,
  /// the ABI version, the library's SHA-256), its parameters rebuilt, its output shape checked with the plugin's
  /// infer.
  void prepareCustom(Step& s) {
    const package::Descriptor& d = *s.d;
    const package::LayerInfo& l = pkg.layers[d.seq];
    const package::CustomLayer& c = *l.custom;
    const std::string qn = c.domain.empty() ? c.op : c.domain + "." + c.op;
    const std::string what = fmt::format("layer '{}' (custom op '{}')", l.name, qn);
    if (c.abi_version != NPUC_CUSTOM_OP_ABI_VERSION)
      fail(ErrorCode::kInvalidInput, "{}: the package was translated with custom-op ABI version {} (plugin {}, sha256 {}); "
           "this npuc speaks version {} (translate it again with this npuc and a plugin built for it)", what,
           c.abi_version, c.library, c.sha256, NPUC_CUSTOM_OP_ABI_VERSION);
    const plugin::CustomOp* op = plugin::find(c.domain, c.op);
    if (!op)
      fail(ErrorCode::kInvalidInput, "{}: its plugin is missing: register {} (sha256 {}) before loading the package "
           "(--custom-op PATH, Runtime::registerCustomOp, npuc_register_custom_op)", what, c.library, c.sha256);
    if (op->library().sha256 != c.sha256)
      fail(ErrorCode::kInvalidInput, "{}: the registered plugin {} has sha256 {}, but the package was translated with "
           "{} (sha256 {}): register the plugin the package was made with, or translate again", what,
           op->library().file_name, op->library().sha256, c.library, c.sha256);
    std::vector<plugin::Param> params;
    int tensors = 0;
    for (const package::CustomParam& q : c.params) {
      plugin::Param p;
      static_cast<plugin::ParamValue&>(p) = q;
      if (q.type == NPUC_PARAM_TENSOR && q.present) {
        p.tensor = viewOf(d.in(q.input));
        ++tensors;
      }
      params.push_back(std::move(p));
    }
    const uint32_t np = op->desc().num_params;
    if (params.size() != np)
      fail(ErrorCode::kInvalidInput, "{}: the package records {} parameters, {} defines {}", what, params.size(), op->label(), np);
    for (uint32_t k = 0; k < np; ++k) {
      const npuc_param_def& pd = op->desc().params[k];
      if (params[k].name != pd.name || params[k].type != pd.type)
        fail(ErrorCode::kInvalidInput, "{}: parameter {} is '{}' ({}) in the package, '{}' ({}) in {}", what, k,
             params[k].name, plugin::paramTypeName(params[k].type), pd.name, plugin::paramTypeName(pd.type), op->label());
      if (pd.required && !params[k].present)
        fail(ErrorCode::kInvalidInput, "{}: the package does not give parameter '{}', which {} requires", what, pd.name, op->label());
    }
    if (d.n_in - tensors != op->numInputs())
      fail(ErrorCode::kInvalidInput, "{}: {} tensor inputs, {} takes {}", what, d.n_in - tensors, op->label(), op->numInputs());
    std::vector<DType> types;
    std::vector<Shape> shapes;
    std::vector<Tensor> constants;  // inputs in the weight space: their data, as shape inference saw it
    constants.reserve(static_cast<size_t>(op->numInputs()));
    std::vector<const Tensor*> values;
    const package::Element* weight = pkg.element("weight");
    for (int i = 0; i < op->numInputs(); ++i) {
      const DType stored = d.in(i).type;
      const DType t = op->passType(i, stored);
      if (t == DType::kUndefined)
        fail(ErrorCode::kInvalidInput, "{}: input {} is {}, which {} does not take", what, i, dtypeName(stored), op->label());
      s.custom_in.push_back(t);
      types.push_back(t);
      shapes.push_back(s.shapes[static_cast<size_t>(i)]);
      const bool is_weight = weight && d.in(i).addr >= weight->addr && d.in(i).addr - weight->addr < weight->size;
      if (is_weight) {  // a constant: its data in the type the plugin is told (converted as execCustom converts it)
        constants.push_back(asPassed(viewOf(d.in(i)), t));
        values.push_back(&constants.back());
      } else {
        values.push_back(nullptr);
      }
    }
    if (d.n_out > op->numOutputs())
      fail(ErrorCode::kInvalidInput, "{}: the layer writes {} outputs, {} defines {}", what, d.n_out, op->label(), op->numOutputs());
    auto outs = op->infer(l.name, types, shapes, values, params);
    for (int k = 0; k < d.n_out; ++k) {
      const DType stored = d.out(k).type;
      const Shape& held = s.shapes[static_cast<size_t>(d.n_in + k)];
      const size_t ku = static_cast<size_t>(k);
      if (outs.size() <= ku || outs[ku].second != held || !(outs[ku].first == stored || (isFloat(outs[ku].first) && isFloat(stored))))
        fail(ErrorCode::kInvalidInput, "{}: {}'s infer gives {} {}, but the package holds {} {} for its output{}", what,
             op->label(), outs.size() <= ku ? "nothing" : dtypeName(outs[ku].first), outs.size() <= ku ? "" : shapeStr(outs[ku].second),
             dtypeName(stored), shapeStr(held), d.n_out == 1 ? std::string() : fmt::format(" {}", k));
      s.custom_out.push_back(outs[ku].first);
    }
    s.custom = std::make_unique<plugin::Instance>(*op, l.name, std::move(params));
  }

  /// A tensor of device memory as a custom op's port takes it: itself, or float16 widened to float32 (exact) / float32
  /// rounded to float16 (nearest even) — CustomOp::passType chose the type.
  static Tensor asPassed(const Tensor& v, DType t) {
    if (v.dtype() == t) return v;
    Tensor w = Tensor::uninitialized(t, v.shape());
    if (v.dtype() == DType::kF16 && t == DType::kF32)
      kernels::f16ToF32_ref(static_cast<const uint16_t*>(v.raw()), w.data<float>(), v.numel());
    else
      kernels::f32ToF16_ref(v.data<float>(), static_cast<uint16_t*>(w.raw()), v.numel(), kernels::Activation{});
    return w;
  }

  void execCustom(Step& s) {
    const package::Descriptor& d = *s.d;
    std::vector<Tensor> in;
    for (size_t i = 0; i < s.custom_in.size(); ++i) in.push_back(asPassed(viewOf(d.in(static_cast<int>(i))), s.custom_in[i]));
    // Each output the layer writes (the plugin computes the op's others, if any, into scratch: Instance::compute),
    // in device memory when the plugin writes the stored type, else converted after the call.
    std::vector<Tensor> out;
    for (int k = 0; k < d.n_out; ++k) {
      const package::TensorRef& y = d.out(k);
      const DType t = s.custom_out[static_cast<size_t>(k)];
      out.push_back(t == y.type ? viewOf(y) : Tensor::uninitialized(t, shapeOf(y)));
    }
    s.custom->compute(in, out, opts.exact, pool ? pool->size() : 1);
    for (int k = 0; k < d.n_out; ++k) {
      const package::TensorRef& y = d.out(k);
      const DType t = s.custom_out[static_cast<size_t>(k)];
      if (t == y.type) continue;
      const Tensor& o = out[static_cast<size_t>(k)];
      void* dst = at(y.addr, y.bytes, "a custom layer's output");
      if (y.type == ElemType::kF16 && t == DType::kF32)
        kernels::f32ToF16_ref(o.data<float>(), static_cast<uint16_t*>(dst), o.numel(), kernels::Activation{});
      else
        kernels::f16ToF32_ref(static_cast<const uint16_t*>(o.raw()), static_cast<float*>(dst), o.numel());
    }
  }

  void exec(Step& s) {
    const package::Descriptor& d = *s.d;
    if (s.p2) return execPow2(s);
    if (s.p2_codes)  // max over codes of one q: exact (fast mode: the int8 kernel)
      return (opts.exact ? kernels::pow2::maxPool : kernels::pow2::maxPoolFast)(s.ps, s.in[0], d.in(0).type == ElemType::kI8,
                                                                                  s.out, pool.get());
    size_t es = package::elemSize(d.out(0).type);
    switch (d.kind) {
      case LayerKind::kCustom: execCustom(s); return;
      case LayerKind::kConv: {
        if (s.qconv)  // --exact: the portable path; fast: the widest path (both qconv_ref's bytes, exact integer sums)
          return s.qconv->run(reinterpret_cast<const int8_t*>(s.in[0]), reinterpret_cast<int8_t*>(s.out), pool.get());
        if (s.conv) {
          // The fast kernels read and write float16 storage themselves (no whole-tensor conversion passes).
          s.conv->run(s.in[0], storageOf(d.in(0)), s.out, storageOf(d.out(0)), pool.get());
          return;
        }
        kernels::conv_exact(s.cs, inF(s, 0), s.w, s.bias, s.act, outF(s), pool.get());
        break;
      }
      case LayerKind::kConvTranspose: {
        const float* x = inF(s, 0);
        float* y = outF(s);
        if (opts.exact) kernels::conv_transpose_ref(s.ts, x, s.w, s.bias, y);
        else kernels::conv_transpose(s.ts, x, s.w, s.bias, y, pool.get());
        break;
      }
      case LayerKind::kGemm: {
        const Shape &xs = s.shapes[0], &ws = s.shapes[1];
        kernels::GemmArgs g;
        g.M = xs[0];
        g.K = xs[1];
        g.N = ws[0];
        g.A = inF(s, 0);
        g.lda = g.K;
        g.B = s.w;
        g.ldb = g.K;
        g.transB = true;
        g.C = outF(s);
        g.ldc = g.N;
        g.bias = s.bias;
        g.bias_kind = s.bias ? kernels::BiasKind::kPerCol : kernels::BiasKind::kNone;
        g.act = s.act;
        if (opts.exact) {
          kernels::sgemm_ref(g);
        } else {
          // y^T [N, M] = w [N, K] * x^T [K, M]: the same reduction over k per output, with w packed once.
          kernels::GemmArgs t;
          t.M = g.N;
          t.N = g.M;
          t.K = g.K;
          t.B = g.A;
          t.ldb = g.K;
          t.transB = true;
          t.bias = s.bias;
          t.bias_kind = s.bias ? kernels::BiasKind::kPerRow : kernels::BiasKind::kNone;
          t.act = s.act;
          if (g.M == 1) {
            t.C = g.C;
            t.ldc = 1;
            kernels::sgemm_packed(*s.packed_w, t, pool.get());
          } else {
            gemm_t.resize(static_cast<size_t>(g.M * g.N));
            t.C = gemm_t.data();
            t.ldc = g.M;
            kernels::sgemm_packed(*s.packed_w, t, pool.get());
            for (int64_t m = 0; m < g.M; ++m)
              for (int64_t n = 0; n < g.N; ++n) g.C[m * g.N + n] = gemm_t[static_cast<size_t>(n * g.M + m)];
          }
        }
        break;
      }
      case LayerKind::kMatMul: {
        if (s.int8) {  // the int8 form: exact integer sums (fast: qmatmul_ref's bytes)
          const auto* a = reinterpret_cast<const int8_t*>(s.in[0]);
          const auto* b = reinterpret_cast<const int8_t*>(s.in[1]);
          auto* y = reinterpret_cast<int8_t*>(s.out);
          if (opts.exact) kernels::qmatmul_ref(s.mm, a, b, s.qmm, y);
          else kernels::qmatmul(s.mm, a, b, s.qmm, y, pool.get());
          return;  // (int8 codes written: no float epilogue)
        }
        const float* a = inF(s, 0);
        const float* b = inF(s, 1);
        const float* bias = d.n_in > 2 ? inF(s, 2) : nullptr;
        const auto bk = s.p[0] == 1 ? kernels::BiasKind::kPerCol : s.p[0] == 2 ? kernels::BiasKind::kPerRow : kernels::BiasKind::kNone;
        if (opts.exact) kernels::matmulBatched_ref(s.mm, a, b, outF(s), s.act, bias, bk);
        else kernels::matmulBatched(s.mm, a, b, outF(s), s.act, pool.get(), bias, bk);
        break;
      }
      case LayerKind::kMaxPool:
      case LayerKind::kAvgPool:
        if (s.int8) {  // avg_pool's int8 form: exact integer sums, one kernel for both modes
          kernels::qavgPool2d(s.ps, reinterpret_cast<const int8_t*>(s.in[0]), s.qavg, reinterpret_cast<int8_t*>(s.out), pool.get());
          return;
        }
        if (d.in(0).type == ElemType::kI8) {  // int8 codes: max is exact, one kernel for both modes
          (opts.exact ? kernels::maxPool2dI8 : kernels::maxPool2dI8Fast)(s.ps, reinterpret_cast<const int8_t*>(s.in[0]), reinterpret_cast<int8_t*>(s.out), pool.get());
          return;
        }
        if (!opts.exact && (!s.post_act || s.act.kind == kernels::ActKind::kNone)) {
          // Planes widened and rounded where they are pooled (no whole-tensor conversion passes).
          if (d.kind == LayerKind::kMaxPool)
            kernels::maxPool2dFast(s.ps, s.in[0], storageOf(d.in(0)), s.out, storageOf(d.out(0)), pool.get());
          else
            kernels::avgPool2dFast(s.ps, s.in[0], storageOf(d.in(0)), s.out, storageOf(d.out(0)), pool.get());
          return;
        }
        if (d.kind == LayerKind::kMaxPool) {
          if (opts.exact) kernels::maxPool2d(s.ps, inF(s, 0), outF(s), pool.get());
          else kernels::maxPool2dFast(s.ps, inF(s, 0), outF(s), pool.get());
        } else {
          if (opts.exact) kernels::avgPool2d(s.ps, inF(s, 0), outF(s), pool.get());
          else kernels::avgPool2dFast(s.ps, inF(s, 0), outF(s), pool.get());
        }
        break;
      case LayerKind::kGlobalAvgPool:
      case LayerKind::kGlobalMaxPool: {
        const Shape& x = s.shapes[0];
        int64_t planes = x[0] * x[1], size = planes ? shapeNumel(x) / planes : 0;
        if (s.int8) {
          kernels::qglobalAvgPool(planes, size, reinterpret_cast<const int8_t*>(s.in[0]), s.qgap, reinterpret_cast<int8_t*>(s.out), pool.get());
          return;
        }
        (d.kind == LayerKind::kGlobalAvgPool ? kernels::globalAvgPool : kernels::globalMaxPool)(planes, size, inF(s, 0), outF(s), pool.get());
        break;
      }
      case LayerKind::kBinary: {
        if (s.int8) {
          const auto* a = reinterpret_cast<const int8_t*>(s.in[0]);
          const auto* b = reinterpret_cast<const int8_t*>(s.in[1]);
          auto* y = reinterpret_cast<int8_t*>(s.out);
          const int64_t n = shapeNumel(s.shapes[0]);
          if (opts.exact) kernels::qadd_ref(n, a, b, s.qadd, y);
          else kernels::qadd(n, a, b, s.qadd, y, pool.get());
          return;
        }
        auto op = static_cast<kernels::BinaryOp>(s.p[0]);  // the code is the op (elementwise_ops.def); validated
        if (!opts.exact && s.shapes[0] == s.shapes[2] && s.shapes[1] == s.shapes[2] && elementwiseF16(s, 2)) {
          // float16 operands of one shape: widened, added and rounded in cache-sized chunks (one pass over memory).
          chunked(s, 2, [&](const float* const* x, float* y, int64_t n) {
            const std::vector<int64_t> shape{n};
            kernels::binary(op, s.act, shape, x[0], shape, x[1], shape, y, nullptr);
          });
          return;
        }
        const float* a = inF(s, 0);
        const float* b = inF(s, 1);
        kernels::binary(op, s.act, s.shapes[0], a, s.shapes[1], b, s.shapes[2], outF(s), pool.get());
        break;
      }
      case LayerKind::kUnary: {
        auto op = static_cast<kernels::UnaryOp>(s.p[0]);  // the code is the op (elementwise_ops.def); validated
        kernels::unary(op, package::paramFloat(s.p[1]), package::paramFloat(s.p[2]), shapeNumel(s.shapes[0]), inF(s, 0), outF(s), pool.get());
        break;
      }
      case LayerKind::kSoftmax: {
        const Shape& y = s.shapes.back();
        size_t axis = s.p[1];
        int64_t outer = 1, len = 1, inner = 1;
        for (size_t i = 0; i < y.size(); ++i) (i < axis ? outer : i == axis ? len : inner) *= y[i];
        (opts.exact ? kernels::softmax : kernels::softmaxFast)(static_cast<kernels::SoftmaxKind>(s.p[0]), outer, len, inner, inF(s, 0),
                                                               outF(s), pool.get());
        break;
      }
      case LayerKind::kChannelAffine: {
        const Shape& x = s.shapes[0];
        int64_t inner = 1;
        for (size_t i = 2; i < x.size(); ++i) inner *= x[i];
        kernels::channelAffine(x[0], x[1], inner, inF(s, 0), reinterpret_cast<const float*>(s.in[1]),
                               reinterpret_cast<const float*>(s.in[2]), outF(s), pool.get());
        break;
      }
      case LayerKind::kInstanceNorm: {
        const Shape& x = s.shapes[0];
        int64_t inner = 1;
        for (size_t i = 2; i < x.size(); ++i) inner *= x[i];
        kernels::instanceNorm(x[0], x[1], inner, package::paramFloat(s.p[0]), inF(s, 0), inF(s, 1), inF(s, 2), outF(s),
                              pool.get());
        break;
      }
      case LayerKind::kLrn: {
        const Shape& x = s.shapes[0];
        int64_t inner = 1;
        for (size_t i = 2; i < x.size(); ++i) inner *= x[i];
        kernels::lrn(x[0], x[1], inner, s.p[0], package::paramFloat(s.p[1]), package::paramFloat(s.p[2]),
                     package::paramFloat(s.p[3]), inF(s, 0), outF(s), pool.get());
        break;
      }
      case LayerKind::kResize: {
        kernels::ResizeSpec spec = package::resizeSpecFromParams(s.p, s.shapes[0].size());
        kernels::resize(spec, s.shapes[0], s.shapes.back(), inF(s, 0), outF(s), pool.get());
        break;
      }
      case LayerKind::kLayerNorm: {
        const Shape& x = s.shapes[0];
        int64_t outer = 1, inner = 1;
        for (size_t i = 0; i < x.size(); ++i) (i < s.p[0] ? outer : inner) *= x[i];
        kernels::layerNorm(outer, inner, package::paramFloat(s.p[1]), inF(s, 0), reinterpret_cast<const float*>(s.in[1]),
                           d.n_in > 2 ? reinterpret_cast<const float*>(s.in[2]) : nullptr, outF(s), nullptr, nullptr,
                           pool.get());
        break;
      }
      case LayerKind::kReduce: {
        const Shape& x = s.shapes[0];
        std::vector<bool> reduced(x.size());
        for (size_t i = 0; i < x.size(); ++i) reduced[i] = s.p[1 + i] != 0;
        kernels::reduce(static_cast<kernels::ReduceOp>(s.p[0]), x, reduced, inF(s, 0), outF(s), pool.get());
        break;
      }
      // Data movement: bits, any element type; no conversion, no activation.
      case LayerKind::kCopy:
        std::memmove(s.out, s.in[0], d.out(0).bytes);
        return;
      case LayerKind::kConcat: {
        std::vector<const void*> ins(s.in.begin(), s.in.end());
        std::vector<std::vector<int64_t>> shapes(s.shapes.begin(), s.shapes.end() - 1);
        kernels::concat(static_cast<int>(s.p[0]), shapes, ins, es, s.out, pool.get());
        return;
      }
      case LayerKind::kTranspose: {
        std::vector<int64_t> perm(s.p.begin(), s.p.end());
        kernels::transpose(s.shapes[0], perm, es, s.in[0], s.out, pool.get());
        return;
      }
      case LayerKind::kPad: {
        size_t r = s.shapes[0].size();
        std::vector<int64_t> b = signedWords(s.p, 0, r), e = signedWords(s.p, r, r);
        float v = package::paramFloat(s.p[2 * r]);
        uint16_t h = floatToHalf(v);
        const void* value = es == 4 ? static_cast<const void*>(&v) : static_cast<const void*>(&h);
        kernels::padConstant(s.shapes[0], b, e, value, es, s.in[0], s.out, pool.get());
        return;
      }
      case LayerKind::kWhere:
        kernels::where(s.shapes[0], s.in[0], s.shapes[1], s.in[1], s.shapes[2], s.in[2], s.shapes.back(), es, s.out,
                       pool.get());
        return;
      case LayerKind::kTile:
        kernels::tile(s.shapes[0], s.shapes.back(), es, s.in[0], s.out, pool.get());
        return;
      case LayerKind::kGather: {
        const Shape& x = s.shapes[0];
        const size_t axis = s.p[0];
        int64_t outer = 1, inner = 1;
        for (size_t i = 0; i < x.size(); ++i)
          if (i != axis) (i < axis ? outer : inner) *= x[i];
        const package::TensorRef& ir = d.in(1);
        std::vector<int64_t> idx(ir.numel());
        if (ir.type == ElemType::kI64) {
          if (!idx.empty()) std::memcpy(idx.data(), s.in[1], idx.size() * sizeof(int64_t));
        } else {
          const int32_t* i32 = reinterpret_cast<const int32_t*>(s.in[1]);
          for (size_t i = 0; i < idx.size(); ++i) idx[i] = i32[i];
        }
        kernels::gather(outer, x[axis], inner, idx, es, s.in[0], s.out, pool.get());
        return;
      }
      case LayerKind::kQuantize:
        (opts.exact ? kernels::quantizeLinear : kernels::quantizeLinearFast)(reinterpret_cast<const float*>(s.in[0]), static_cast<int64_t>(d.in(0).numel()),
                                package::paramFloat(s.p[0]), static_cast<int32_t>(s.p[1]), reinterpret_cast<int8_t*>(s.out), pool.get());
        return;
      case LayerKind::kDequantize:
        (opts.exact ? kernels::dequantizeLinear : kernels::dequantizeLinearFast)(reinterpret_cast<const int8_t*>(s.in[0]), static_cast<int64_t>(d.in(0).numel()),
                                  package::paramFloat(s.p[0]), static_cast<int32_t>(s.p[1]), reinterpret_cast<float*>(s.out), pool.get());
        return;
      case LayerKind::kSlice: {
        size_t r = s.shapes[0].size();
        kernels::slice(s.shapes[0], signedWords(s.p, 0, r), signedWords(s.p, r, r), s.shapes.back(), es, s.in[0], s.out, pool.get());
        return;
      }
      // Pre/post-processing: the kernels of kernels/prepost.hpp on the types the references carry (validated).
      default: execPrePost(s); return;
    }
    store(s);
  }
};

Runtime::Runtime(const std::filesystem::path& dir, RuntimeOptions opts) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.opts = opts;
  if (opts.threads < 1) fail(ErrorCode::kInvalidArgument, "threads must be at least 1 (got {})", opts.threads);
  if (package::hasGears(dir)) {
    const package::Gears g = package::readGears(dir);
    im.gear_kind = g.kind;
    im.gear_input = g.input;
    for (const package::Gear& x : g.gears) {
      if (package::hasGears(dir / x.dir))
        fail(ErrorCode::kInvalidInput, "{}: gear '{}' holds gears of its own (a gear's folder holds an ordinary package)", dir.string(), x.dir);
      Runtime one(dir / x.dir, opts);
      const auto& ins = one.inputs();
      auto in = std::find_if(ins.begin(), ins.end(), [&](const RuntimeTensor& r) { return r.name == g.input; });
      // (behind an AIPP stage the input is the frame [N, bytes]: its batch is checked, its image size is the stage's)
      if (in == ins.end() || in->shape.empty() ||
          (g.kind == "batch" ? in->shape[0] != x.batch
                             : in->shape.size() == 4 && (in->shape[2] != x.height || in->shape[3] != x.width)))
        fail(ErrorCode::kInvalidInput, "{}: gear '{}' does not hold input '{}' of the size gears.json gives", dir.string(), x.dir, g.input);
      im.gear_programs.push_back(std::move(one.impl_));
      im.gears.push_back({x.batch, x.height, x.width});
    }
    im.cur = im.gear_programs.front().get();
    return;
  }
  im.pkg = package::readPackage(dir);
  im.numerics = std::string(numericsName(im.pkg.numerics));
  // Both modes split layers' outputs among the threads (never a reduction), so the bits do not depend on them.
  im.pool = std::make_unique<ThreadPool>(opts.threads);
  im.prepare();
}

void Runtime::resetState() {
  impl_->resetPow2();
  for (auto& g : impl_->gear_programs) g->resetPow2();
}

void Runtime::registerCustomOp(const std::filesystem::path& library) { plugin::registerLibrary(library); }

Runtime::~Runtime() = default;
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;

const std::string& Runtime::target() const { return impl_->cur->pkg.target; }
const std::string& Runtime::numerics() const { return impl_->cur->numerics; }
const std::string& Runtime::contentHash() const { return impl_->cur->pkg.content_hash; }
const std::vector<RuntimeTensor>& Runtime::inputs() const { return impl_->cur->inputs; }
const std::vector<RuntimeTensor>& Runtime::outputs() const { return impl_->cur->outputs; }
const std::vector<RuntimeLayer>& Runtime::layers() const { return impl_->cur->layers; }
const std::vector<double>& Runtime::layerTimes() const { return impl_->cur->times; }

double Runtime::outputScale(int seq) const {
  const Impl& im = *impl_->cur;
  if (seq < 0 || static_cast<size_t>(seq) >= im.layers.size())
    fail(ErrorCode::kInvalidArgument, "outputScale: layer seq {} is out of range (the package has {} layers)", seq, im.layers.size());
  if (!im.pkg.pow2) return im.layers[static_cast<size_t>(seq)].scale;
  const int slot = im.p2_out_slot[static_cast<size_t>(seq)];
  return slot < 0 ? 0.0 : std::ldexp(1.0, -im.p2_slots[static_cast<size_t>(slot)].q);
}
const std::vector<RuntimeGear>& Runtime::gears() const { return impl_->gears; }
const std::string& Runtime::gearKind() const { return impl_->gear_kind; }
const std::string& Runtime::gearInput() const { return impl_->gear_input; }

namespace {
std::string gearList(const std::vector<RuntimeGear>& gears, bool batch) {
  std::string s;
  for (auto& g : gears) s += (s.empty() ? "" : ", ") + (batch ? std::to_string(g.batch) : fmt::format("{}x{}", g.height, g.width));
  return s;
}
}  // namespace

void Runtime::setDynamicBatchSize(int64_t n) {
  Impl& im = *impl_;
  if (im.gear_kind != "batch")
    fail(ErrorCode::kInvalidArgument, "the package has no batch gears (translate with --dynamic_batch_size to get them)");
  for (size_t i = 0; i < im.gears.size(); ++i)
    if (im.gears[i].batch == n) {
      im.cur = im.gear_programs[i].get();
      return;
    }
  fail(ErrorCode::kInvalidArgument, "no gear of batch size {} (the package's gears: {})", n, gearList(im.gears, true));
}

void Runtime::setDynamicHWSize(int64_t height, int64_t width) {
  Impl& im = *impl_;
  if (im.gear_kind != "image_size")
    fail(ErrorCode::kInvalidArgument, "the package has no image-size gears (translate with --dynamic_image_size to get them)");
  for (size_t i = 0; i < im.gears.size(); ++i)
    if (im.gears[i].height == height && im.gears[i].width == width) {
      im.cur = im.gear_programs[i].get();
      return;
    }
  fail(ErrorCode::kInvalidArgument, "no gear of height x width {}x{} (the package's gears: {})", height, width, gearList(im.gears, false));
}

void Runtime::setInput(const std::string& name, const Tensor& t) { setInput(name, t.dtype(), t.shape(), t.raw()); }

void Runtime::setInput(const std::string& name, DType dtype, const Shape& shape, const void* data) {
  Impl& im = *impl_->cur;
  auto it = std::find_if(im.inputs.begin(), im.inputs.end(), [&](const RuntimeTensor& r) { return r.name == name; });
  if (it == im.inputs.end()) {
    std::string names;
    for (auto& r : im.inputs) names += (names.empty() ? "" : ", ") + r.name;
    fail(ErrorCode::kInvalidArgument, "the package has no input '{}' (inputs: {})", name, names);
  }
  int64_t n = shapeNumel(it->shape);
  // The frame of a dynamic AIPP stage may hold fewer bytes per image than max_src_image_size: [N, B] with B at least
  // what the parameter block's source needs (docs/aipp.md, "Frames smaller than max_src_image_size").
  if (Impl::Step* stage = im.dynamicAippStage(it->address); stage && it->shape.size() == 2 && shape.size() == 2 &&
                                                             shape[0] == it->shape[0] && dtype == DType::kU8) {
    const int64_t max = it->shape[1], b = shape[1];
    if (b < 1 || b > max)
      fail(ErrorCode::kInvalidArgument, "input '{}' (the frame of a dynamic AIPP stage) takes uint8 [{}, B] with B bytes per image, "
           "at most max_src_image_size {}; got {}", name, it->shape[0], max, shapeStr(shape));
    // The block set now (if any) must fit: its source image's bytes at most B.
    const package::TensorRef& pr = stage->d->in(1);
    kernels::AippParams cur;
    bool have = false;
    try {
      cur = kernels::decodeAipp(im.at(pr.addr, pr.bytes, "AIPP parameters of " + name), pr.bytes);
      have = true;
    } catch (const Error&) {  // no block set yet: the run checks
    }
    if (have && kernels::isAippFormat(cur.input_format)) {
      const auto f = static_cast<kernels::AippFormat>(cur.input_format);
      const int64_t need = kernels::aippImageBytes(f, cur.src_w, cur.src_h);
      if (need > b)
        fail(ErrorCode::kInvalidArgument, "input '{}': aipp.src_size: a frame of {} bytes per image is smaller than the {}x{} {} "
             "source the AIPP parameter block gives, which needs {} bytes per image", name, b, cur.src_w, cur.src_h,
             kernels::aippFormatName(f), need);
    }
    std::memcpy(im.at(it->address, static_cast<uint64_t>(shape[0] * b), "input " + name), data, static_cast<size_t>(shape[0] * b));
    stage->aipp_stride = b == max ? 0 : b;
    im.markSet(static_cast<size_t>(it - im.inputs.begin()));
    return;
  }
  // The exact shape: a tensor of another shape (even with the same element count) is a mistake, not a reshape.
  if (shape != it->shape)
    fail(ErrorCode::kInvalidArgument, "input '{}' needs shape {}, got {}{}", name, shapeStr(it->shape), shapeStr(shape),
         shapeNumel(shape) == n ? " (the same number of elements, in another shape: reshape it yourself if that is what you mean)" : "");
  uint8_t* dst = im.at(it->address, static_cast<uint64_t>(n) * dtypeSize(it->dtype), "input " + name);
  const size_t index = static_cast<size_t>(it - im.inputs.begin());
  if (dtype == it->dtype || (dtype == DType::kBool && it->dtype == DType::kU8)) {  // bool: a byte, 0 or 1
    std::memcpy(dst, data, static_cast<size_t>(n) * dtypeSize(dtype));
  } else if ((it->dtype == DType::kF16 || it->dtype == DType::kF32) &&
             (dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16)) {
    // Another float type: widened exactly to float32, then (a float16 device input) rounded to nearest even.
    auto at = [&](int64_t i) {
      if (dtype == DType::kF32) return static_cast<const float*>(data)[i];
      const uint16_t h = static_cast<const uint16_t*>(data)[i];
      return dtype == DType::kF16 ? halfToFloat(h) : bf16ToFloat(h);
    };
    if (it->dtype == DType::kF32) {
      float* d = reinterpret_cast<float*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = at(i);
    } else {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = floatToHalf(at(i));
    }
  } else {
    fail(ErrorCode::kInvalidArgument, "input '{}' is {} on the device; got {} (give {}{})", name, dtypeName(it->dtype),
         dtypeName(dtype), dtypeName(it->dtype),
         isFloat(it->dtype) ? ", or float32, float16 or bfloat16" : "");
  }
  im.markSet(index);
}

namespace {
uint8_t* aippBlockDestination(Runtime::Impl& im, const std::string& input, const std::vector<uint8_t>& params);
}  // namespace

void Runtime::setDynamicAipp(const std::string& input, const std::vector<uint8_t>& params) {
  if (!impl_->gears.empty()) {
    Impl& holder = *impl_;
    kernels::AippParams p;
    try {
      p = kernels::decodeAipp(params.data(), params.size());
    } catch (const Error& e) {
      fail(ErrorCode::kInvalidArgument, "input '{}': AIPP parameter block refused: {}", input, e.what());
    }
    if (holder.gear_kind == "batch") {
      // The seed: with dynamic batch, the block is set for the largest batch; each gear takes its first records.
      int64_t most = 0;
      for (auto& g : holder.gears) most = std::max(most, g.batch);
      if (static_cast<int64_t>(p.batch.size()) != most)
        fail(ErrorCode::kInvalidArgument, "input '{}': aipp.dynamic_batch: with batch gears the block holds the largest batch, {} "
             "image(s) (batchNum {}), got batchNum {}", input, most, most, p.batch.size());
      // Every gear's block checked before any is written: a refused block leaves them all as they were.
      std::vector<std::tuple<Impl*, uint8_t*, std::vector<uint8_t>>> blocks;
      for (size_t i = 0; i < holder.gears.size(); ++i) {
        kernels::AippParams mine = p;
        mine.batch.resize(static_cast<size_t>(holder.gears[i].batch));
        std::vector<uint8_t> block = kernels::encodeAipp(mine);
        uint8_t* dst = aippBlockDestination(*holder.gear_programs[i], input, block);
        blocks.emplace_back(holder.gear_programs[i].get(), dst, std::move(block));
      }
      for (auto& [prog, dst, block] : blocks) {
        std::memcpy(dst, block.data(), block.size());
        prog->markWritten(dst);
      }
      return;
    }
    // The seed: with dynamic image sizes, a dynamic AIPP block may not crop or pad, and its width and height are the
    // largest gear's (on a smaller gear, npuc's scf takes the picture down to that gear's size).
    for (auto& b : p.batch)
      if (b.crop || b.padding)
        fail(ErrorCode::kInvalidArgument, "input '{}': aipp.dynamic_image_size: with image-size gears the block may not crop or pad "
             "(cropSwitch {}, paddingSwitch {})", input, b.crop, b.padding);
    std::vector<std::pair<int64_t, int64_t>> hw;
    for (const RuntimeGear& g : holder.gears) hw.emplace_back(g.height, g.width);
    const int at = package::largestGear(hw);
    const RuntimeGear* largest = at < 0 ? nullptr : &holder.gears[static_cast<size_t>(at)];
    if (!largest)
      fail(ErrorCode::kInvalidArgument, "input '{}': aipp.dynamic_image_size: no gear is at least as high and as wide as every other "
           "(gears: {}), so the block has no largest gear's size to take", input, gearList(holder.gears, false));
    if (p.src_w != largest->width || p.src_h != largest->height)
      fail(ErrorCode::kInvalidArgument, "input '{}': aipp.dynamic_image_size: with image-size gears the block's srcImageSizeW x H "
           "is the largest gear's, {}x{}, got {}x{}", input, largest->width, largest->height, p.src_w, p.src_h);
  }
  uint8_t* dst = aippBlockDestination(*impl_->cur, input, params);
  std::memcpy(dst, params.data(), params.size());
  impl_->cur->markWritten(dst);
}

void Runtime::setDynamicAipp(const std::string& input, const DynamicAippParams& params) {
  std::vector<uint8_t> block;
  try {
    block = params.encode();
  } catch (const Error& e) {
    fail(ErrorCode::kInvalidArgument, "input '{}': AIPP parameter block refused: {}", input, e.what());
  }
  setDynamicAipp(input, block);
}

namespace {
/// Where the dynamic AIPP block of `input` goes in one program, after checking `params` against its stage (the
/// caller copies it there).
uint8_t* aippBlockDestination(Runtime::Impl& im, const std::string& input, const std::vector<uint8_t>& params) {
  using Impl = Runtime::Impl;
  auto it = std::find_if(im.inputs.begin(), im.inputs.end(), [&](const RuntimeTensor& r) { return r.name == input; });
  if (it == im.inputs.end()) fail(ErrorCode::kInvalidArgument, "the package has no input '{}'", input);
  const Impl::Step* stage = nullptr;
  for (const Impl::Step& s : im.steps)
    if (s.d->kind == LayerKind::kAipp && s.d->n_in == 2 && (s.d->in(0).addr == it->address || s.d->in(1).addr == it->address))
      stage = &s;
  if (!stage)
    fail(ErrorCode::kInvalidArgument, "input '{}' has no dynamic AIPP stage (translate with a dynamic aipp_op for it)", input);
  const package::TensorRef& pr = stage->d->in(1);
  if (params.size() != pr.bytes)
    fail(ErrorCode::kInvalidArgument, "input '{}': aipp.block.size: a parameter block for {} image(s) is {} bytes "
         "(kAippDynamicPara + {} x kAippDynamicBatchPara), got {}", input, stage->shapes.back()[0], pr.bytes,
         stage->shapes.back()[0] - 1, params.size());
  std::string why;
  try {
    // (against max_src_image_size: a frame set earlier may be replaced; the run checks the frame given)
    why = kernels::checkAipp(kernels::decodeAipp(params.data(), params.size()), Impl::aippSetup(*stage, false));
  } catch (const Error& e) {
    why = e.what();
  }
  if (!why.empty()) fail(ErrorCode::kInvalidArgument, "input '{}': AIPP parameter block refused: {}", input, why);
  return im.at(pr.addr, pr.bytes, "AIPP parameters of " + input);
}

}  // namespace

void Runtime::run(const LayerCallback& cb) {
  Impl& im = *impl_->cur;
  im.checkInputsSet();
  if (im.opts.profile) im.times.assign(im.steps.size(), 0.0);
  for (size_t i = 0; i < im.steps.size(); ++i) {
    if (im.only_group > 0 && im.layers[i].group != im.only_group) continue;  // (a pipeline stage: its group only)
    if (im.opts.profile) {
      auto t0 = std::chrono::steady_clock::now();
      im.exec(im.steps[i]);
      im.times[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    } else {
      im.exec(im.steps[i]);
    }
    if (cb) {
      const RuntimeLayer& l = im.layers[i];
      auto view = [&](const RuntimeLayer& rl, const package::TensorRef& r) {
        for (auto& s : im.spaces)
          if (r.addr >= s.addr && r.addr - s.addr < s.size) {
            cb(rl, Tensor(rl.output.dtype, rl.output.shape, s.buf, r.addr - s.addr));
            break;
          }
      };
      view(l, im.steps[i].d->out(0));
      for (size_t k = 0; k < l.more_outputs.size(); ++k) {  // (a custom layer's other outputs, each named as `output`)
        RuntimeLayer o = l;
        o.output = l.more_outputs[k];
        o.output_index = static_cast<int>(k + 1);
        o.scale = 0, o.zero_point = 0, o.float_value.clear();
        view(o, im.steps[i].d->out(static_cast<int>(k + 1)));
      }
    }
  }
}

Tensor Runtime::output(const std::string& name) const {
  Impl& im = *impl_->cur;
  auto it = std::find_if(im.outputs.begin(), im.outputs.end(), [&](const RuntimeTensor& r) { return r.name == name; });
  if (it == im.outputs.end()) fail(ErrorCode::kInvalidArgument, "the package has no output '{}'", name);
  Tensor t(it->dtype, it->shape);
  std::memcpy(t.raw(), im.at(it->address, t.nbytes(), "output " + name), t.nbytes());
  return t;
}

Tensor Runtime::outputFloat(const std::string& name) const {
  Tensor t = output(name);
  if (t.dtype() == DType::kF32) return t;
  Tensor f(DType::kF32, t.shape());
  if (t.dtype() == DType::kF16) {
    kernels::f16ToF32_ref(static_cast<const uint16_t*>(t.raw()), f.data<float>(), t.numel());
    return f;
  }
  auto v = t.toDouble();
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = static_cast<float>(v[static_cast<size_t>(i)]);
  return f;
}

std::vector<Tensor> Runtime::run(const std::vector<Tensor>& ins, const LayerCallback& cb) {
  const Impl& im = *impl_->cur;
  if (ins.size() != im.inputs.size())
    fail(ErrorCode::kInvalidArgument, "the package has {} inputs, got {}", im.inputs.size(), ins.size());
  for (size_t i = 0; i < ins.size(); ++i) setInput(im.inputs[i].name, ins[i]);
  run(cb);
  std::vector<Tensor> outs;
  for (auto& o : im.outputs) outs.push_back(outputFloat(o.name));
  return outs;
}

// ---- Pipeline --------------------------------------------------------------------------------------------------

namespace {

/// Byte ranges [addr, addr + bytes), sorted and merged.
std::vector<std::pair<uint64_t, uint64_t>> mergeRanges(std::vector<std::pair<uint64_t, uint64_t>> r) {
  std::sort(r.begin(), r.end());
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (auto [a, n] : r) {
    if (n == 0) continue;
    if (!out.empty() && a <= out.back().first + out.back().second)
      out.back().second = std::max(out.back().first + out.back().second, a + n) - out.back().first;
    else
      out.push_back({a, n});
  }
  return out;
}

bool covered(const std::vector<std::pair<uint64_t, uint64_t>>& merged, uint64_t a, uint64_t n) {
  for (auto [b, m] : merged)
    if (a >= b && a + n <= b + m) return true;
  return false;
}

/// Adds [a, a + n) to sorted, merged ranges, keeping them so.
void addRange(std::vector<std::pair<uint64_t, uint64_t>>& merged, uint64_t a, uint64_t n) {
  if (n == 0) return;
  auto it = std::lower_bound(merged.begin(), merged.end(), std::pair<uint64_t, uint64_t>{a, 0});
  if (it != merged.begin() && std::prev(it)->first + std::prev(it)->second >= a) --it;  // touches the one before
  uint64_t lo = a, hi = a + n;
  auto end = it;
  for (; end != merged.end() && end->first <= hi; ++end) {
    lo = std::min(lo, end->first);
    hi = std::max(hi, end->first + end->second);
  }
  it = merged.erase(it, end);
  merged.insert(it, {lo, hi - lo});
}

}  // namespace

struct Pipeline::Impl {
  std::vector<Runtime> stages;
  std::vector<int> groups;
  // Into stage k (k >= 1): the device bytes it and the later stages read that earlier stages wrote (or that are
  // package inputs), and the int8-pow2 slots earlier stages write.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> in_ranges;
  std::vector<std::vector<int32_t>> in_slots;
  std::vector<double> stage_ms;
  std::vector<uint64_t> handoff_bytes;
  double wall_ms = 0;
};

Pipeline::Pipeline(const std::filesystem::path& dir, RuntimeOptions opts) : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  Runtime first(dir, opts);
  if (!first.gears().empty()) fail(ErrorCode::kInvalidArgument, "{}: a package with gears does not run as a pipeline", dir.string());
  for (const RuntimeLayer& l : first.layers())
    if (p.groups.empty() || l.group != p.groups.back()) p.groups.push_back(l.group);  // (non-decreasing: validated)
  p.stages.push_back(std::move(first));
  for (size_t k = 1; k < p.groups.size(); ++k) p.stages.emplace_back(dir, opts);
  const Runtime::Impl& im = *p.stages[0].impl_;
  auto dataSpace = [&](uint64_t addr) {
    for (const Space& sp : im.spaces)
      if (addr >= sp.addr && addr - sp.addr < sp.size)
        return sp.name == "data_in" || sp.name == "data" || sp.name == "data_out" || sp.name == "work";
    return false;
  };
  p.in_ranges.assign(p.groups.size(), {});
  p.in_slots.assign(p.groups.size(), {});
  for (size_t k = 1; k < p.groups.size(); ++k) {
    const int g = p.groups[k];
    std::vector<std::pair<uint64_t, uint64_t>> need, written;  // (written: sorted and merged)
    for (size_t i = 0; i < im.steps.size(); ++i) {
      const package::Descriptor& d = *im.steps[i].d;
      if (im.layers[i].group < g) {
        if (im.steps[i].p2 && im.steps[i].p2->out.slot >= 0) p.in_slots[k].push_back(im.steps[i].p2->out.slot);
        continue;
      }
      for (int j = 0; j < d.n_in; ++j)
        if (dataSpace(d.in(j).addr) && !covered(written, d.in(j).addr, d.in(j).bytes)) need.push_back({d.in(j).addr, d.in(j).bytes});
      for (int j = 0; j < d.n_out; ++j) addRange(written, d.out(j).addr, d.out(j).bytes);
    }
    for (const package::IoTensor& o : im.pkg.outputs)  // outputs earlier stages write reach the last one
      if (!covered(written, o.ref.addr, o.ref.bytes)) need.push_back({o.ref.addr, o.ref.bytes});
    p.in_ranges[k] = mergeRanges(need);
  }
  for (size_t k = 0; k < p.stages.size(); ++k) {
    p.stages[k].impl_->only_group = p.groups[k];
    p.stages[k].impl_->check_inputs = k == 0;  // (later stages take their inputs from the stage before)
  }
}

Pipeline::~Pipeline() = default;

const std::vector<int>& Pipeline::groups() const { return impl_->groups; }
const std::vector<RuntimeTensor>& Pipeline::inputs() const { return impl_->stages[0].inputs(); }
const std::vector<RuntimeTensor>& Pipeline::outputs() const { return impl_->stages[0].outputs(); }
const std::vector<double>& Pipeline::stageMs() const { return impl_->stage_ms; }
double Pipeline::wallMs() const { return impl_->wall_ms; }
const std::vector<uint64_t>& Pipeline::handoffBytes() const { return impl_->handoff_bytes; }

void Pipeline::resetState() {
  for (Runtime& r : impl_->stages) r.resetState();
}

std::vector<std::vector<Tensor>> Pipeline::run(const std::vector<std::vector<Tensor>>& frames) {
  Impl& p = *impl_;
  const size_t S = p.stages.size(), F = frames.size();
  for (size_t i = 0; i < F; ++i)
    if (frames[i].size() != inputs().size())
      fail(ErrorCode::kInvalidArgument, "frame {}: the package has {} inputs, got {}", i, inputs().size(), frames[i].size());
  // One hand-over buffer between consecutive stages: the bytes and slots stage k + 1 takes in, of one frame.
  struct Handoff {
    std::vector<uint8_t> bytes;
    std::vector<kernels::pow2::Slot> slots;
    int64_t frame = -1;  // the frame it holds; -1: empty
  };
  std::vector<Handoff> box(S);
  std::mutex mu;
  std::condition_variable cv;
  bool failed = false;
  std::exception_ptr error;
  std::vector<std::vector<Tensor>> results(F);
  std::vector<double> busy(S, 0.0);
  p.handoff_bytes.assign(S, 0);
  for (size_t k = 1; k < S; ++k)
    for (auto [a, n] : p.in_ranges[k]) p.handoff_bytes[k] += n;
  auto stage = [&](size_t k) {
    try {
      Runtime& rt = p.stages[k];
      Runtime::Impl& im = *rt.impl_;
      for (size_t f = 0; f < F; ++f) {
        if (k == 0) {
          for (size_t j = 0; j < frames[f].size(); ++j) rt.setInput(rt.inputs()[j].name, frames[f][j]);
        } else {  // take frame f from the stage before (one producer, one consumer: the copy runs unlocked)
          {
            std::unique_lock<std::mutex> lk(mu);
            cv.wait(lk, [&] { return failed || box[k].frame == static_cast<int64_t>(f); });
            if (failed) return;
          }
          const auto t0 = std::chrono::steady_clock::now();
          size_t at = 0;
          for (auto [a, n] : p.in_ranges[k]) {
            std::memcpy(im.at(a, n, "pipeline hand-over"), box[k].bytes.data() + at, n);
            at += n;
          }
          for (size_t j = 0; j < p.in_slots[k].size(); ++j) im.p2_slots[static_cast<size_t>(p.in_slots[k][j])] = box[k].slots[j];
          busy[k] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          std::lock_guard<std::mutex> lk(mu);
          box[k].frame = -1;
          cv.notify_all();
        }
        const auto t0 = std::chrono::steady_clock::now();
        rt.run();
        busy[k] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (k + 1 < S) {  // hand frame f to the next stage once it has taken the one before
          {
            std::unique_lock<std::mutex> lk(mu);
            cv.wait(lk, [&] { return failed || box[k + 1].frame < 0; });
            if (failed) return;
          }
          Handoff& h = box[k + 1];
          h.bytes.resize(p.handoff_bytes[k + 1]);
          size_t at = 0;
          for (auto [a, n] : p.in_ranges[k + 1]) {
            std::memcpy(h.bytes.data() + at, im.at(a, n, "pipeline hand-over"), n);
            at += n;
          }
          h.slots.clear();
          for (int32_t sl : p.in_slots[k + 1]) h.slots.push_back(im.p2_slots[static_cast<size_t>(sl)]);
          std::lock_guard<std::mutex> lk(mu);
          h.frame = static_cast<int64_t>(f);
          cv.notify_all();
        } else {
          for (const RuntimeTensor& o : rt.outputs()) results[f].push_back(rt.outputFloat(o.name));
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu);
      if (!failed) error = std::current_exception();
      failed = true;
      cv.notify_all();
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  try {
    for (size_t k = 1; k < S; ++k) threads.emplace_back(stage, k);
  } catch (...) {  // (a thread that could not start: the others are told to stop)
    std::lock_guard<std::mutex> lk(mu);
    if (!failed) error = std::current_exception();
    failed = true;
    cv.notify_all();
  }
  if (!failed) stage(0);
  for (auto& t : threads) t.join();
  p.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (error) {
    // Stages stopped at different frames: their int8-pow2 histories no longer belong to one sequence. Every stage
    // starts again from the calibrated ranges, as a new Pipeline would.
    resetState();
    std::rethrow_exception(error);
  }
  p.stage_ms.assign(S, 0.0);
  for (size_t k = 0; k < S; ++k) p.stage_ms[k] = F > 0 ? busy[k] / static_cast<double>(F) : 0.0;
  return results;
}

}  // namespace npuc
