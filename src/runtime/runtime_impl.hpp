// The simulated device's internals (internal to the runtime library; docs/simulator.md). One Runtime::Impl is one
// loaded program: the device memory (the address map's element spaces), the package's tensors and layers, and a Step
// per descriptor. The files that make it up, by concept:
//   runtime.cpp       the public Runtime: loading (an ordinary package or its gears), inputs, outputs, run
//   loader.cpp        the package loader: memory, images, tensors, layers, and each descriptor's Step
//   executor.cpp      the executor: a step's float32 views and stores, and the dispatch to its kind
//   exec_<family>.cpp how each layer kind runs (mirroring package/validate_<family>.cpp and codegen/lower_<family>.cpp)
//   exec_pow2.cpp     the int8-pow2 forms (their tables, slots and per-frame scales)
//   gear_state.cpp    the gears (batch / image-size programs) and the dynamic AIPP parameter blocks
//   pipeline.cpp      Pipeline: a package's layers groups as stages on threads
#pragma once

#include "npuc/runtime.hpp"

#include "kernels/aipp.hpp"
#include "kernels/conv.hpp"
#include "kernels/convert.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layers.hpp"
#include "kernels/pow2.hpp"
#include "kernels/prepost.hpp"
#include "kernels/quant.hpp"
#include "kernels/recurrent.hpp"
#include "package/package.hpp"
#include "plugin/plugin.hpp"
#include "support/error.hpp"
#include "support/thread_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace npuc {

using package::ElemType;
using package::LayerKind;

Shape shapeOf(const package::TensorRef& r);
/// Parameter words [from, from + n) read as two's-complement 32-bit values (pads, starts, steps).
std::vector<int64_t> signedWords(const std::vector<uint32_t>& p, size_t from, size_t n);
/// The elements of an int32 or int64 tensor (a layer's indices or computed parameters; the reader checked the type)
/// as int64.
std::vector<int64_t> intValues(const package::TensorRef& r, const uint8_t* data);

/// An element space of the device's memory.
struct Space {
  std::string name;
  uint64_t addr = 0, size = 0;
  std::shared_ptr<Buffer> buf;
};

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
    // Channel-last references (package::RefLayout): bit i for input i, and the output; the executor transposes them
    // into and out of layout_scratch around the layer (execChannelLast).
    uint8_t channel_last_in = 0;
    bool channel_last_out = false;
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
    kernels::QMulParams qmul;                // binary's int8 product (int8 with a Mul op word)
    bool int8_product = false;
    kernels::QMatMulParams qmm;  // matmul in its int8 form
    kernels::QGlobalAvgPoolParams qgap;
    kernels::QAvgPoolParams qavg;  // avg_pool in its int8 form
    std::unique_ptr<plugin::Instance> custom;  // a custom layer: its plugin op, parameters and state
    std::vector<DType> custom_in;              // the type each input passes to the plugin as
    std::vector<DType> custom_out;             // the type the plugin writes each output in
    std::optional<kernels::pow2::Table> p2;    // a layer in its int8-pow2 form: its table (slots, activation, q's)
    kernels::pow2::PackedWeights p2_w;         // its conv / gemm weights packed once for fast mode's VNNI form
    bool p2_codes = false;                     // max pooling on int8-pow2 codes (no table: the input's slot)
    kernels::RnnShape rnn;                     // recurrent: the layer (its words and tensors)
    kernels::RnnPackedPtr rnn_packed;          // its W and R packed once when they are weights (fast mode)
    int64_t aipp_stride = 0;  // a dynamic AIPP stage given a frame smaller than max_src_image_size: its bytes per image
    // A control layer (if, loop, scan; exec_control.cpp): its moves with their device memory, its regions' lengths,
    // a loop's step number and condition scalars, and how many descriptors after it are its regions (the executor
    // steps over them: the control layer runs them).
    struct Move {
      package::ControlMove m;
      const uint8_t* src = nullptr;
      uint8_t* dst = nullptr;
    };
    std::vector<Move> moves;
    std::vector<uint32_t> regions;
    uint8_t* iteration = nullptr;
    uint8_t* cond_in = nullptr;
    const uint8_t* cond_out = nullptr;
    size_t skip = 0;
    // A dynamic layer (package::kFlagDynamic; execDynamic): the descriptor its kind sees — its data references, whose
    // dims each run sets to the extents (d points at it) —, their capacities, and the extents' memory.
    struct Dynamic {
      package::Descriptor view;
      std::vector<Shape> capacity;  // per data reference: inputs, then outputs
      std::vector<const uint8_t*> in_extent;
      std::vector<uint8_t*> out_extent;
    };
    std::unique_ptr<Dynamic> dyn;
  };
  std::vector<Step> steps;  // by seq

  // A package with gears: this Impl holds one program (an Impl) per gear and forwards to the selected one, `cur`;
  // for an ordinary package cur is this.
  std::vector<std::unique_ptr<Impl>> gear_programs;
  std::vector<RuntimeGear> gears;
  std::string gear_kind, gear_input;
  Impl* cur = this;
  // A package serving shape ranges (package/shape_ranges.hpp): its ranged dims, the sizes `cur` runs at, and the
  // programs made at other sizes, most recently used last (this Impl is the one at every range's largest size).
  std::vector<RuntimeRange> ranges;
  std::vector<int64_t> range_at;
  std::vector<std::pair<std::vector<int64_t>, std::unique_ptr<Impl>>> range_programs;
  std::vector<double> times;
  std::vector<std::vector<float>> scratch;  // per input slot, plus one for the output (fp16 packages)
  std::vector<std::vector<uint8_t>> layout_scratch;  // per reference slot: a channel-last tensor as its layer sees it
  std::vector<float> gemm_t;                // transposed gemm result (M > 1)
  std::vector<kernels::pow2::Slot> p2_slots;  // int8-pow2: each slot's q and range history (the package's state)
  std::vector<int> p2_out_slot;               // int8-pow2: by seq, the slot of the layer's output codes (-1: none)
  std::vector<int64_t> clipped;               // int8-pow2: by seq, the last run's negative inputs of an unsigned quantize
  std::vector<int64_t> p2_acc;                // int8-pow2: a layer's accumulators
  std::vector<int32_t> p2_acc32;              // (fast mode, where they fit in int32)
  int only_group = 0;                         // > 0: run only the layers of this group (a Pipeline stage)
  std::vector<char> input_set;                // by inputs(): set since the package was loaded (run refuses before)
  bool check_inputs = true;                   // false: a later Pipeline stage (its inputs come from the one before)

  [[noreturn]] void fault(const std::string& msg) const { fail(ErrorCode::kInvalidInput, "device fault: {}", msg); }

  // ---- runtime.cpp: the inputs set since loading
  /// Marks input `i` set (setInput, setImageInput, setDynamicAipp write it).
  void markSet(size_t i);
  /// Marks the input stored at `dst` set (a dynamic AIPP parameter block, written in place).
  void markWritten(const uint8_t* dst);
  /// run(): every input set at least once since loading (the device keeps what was set; never-set memory is not an
  /// input), else kInvalidArgument naming those that were not.
  void checkInputsSet() const;

  // ---- gear_state.cpp: shape ranges
  /// Selects the program at sizes `at` (one per range: made on first use, the last kMaxRangePrograms kept), carrying the
  /// inputs set in the current program that the selected one holds in the same shape, and the AIPP stages' frame sizes.
  void selectRange(const std::vector<int64_t>& at);
  static constexpr size_t kMaxRangePrograms = 4;

  // ---- loader.cpp: the package loader
  /// Device memory at [addr, addr + bytes), which must lie in one element space (else a device fault).
  uint8_t* at(uint64_t addr, uint64_t bytes, const std::string& what);
  Space& space(const std::string& name);
  void load(const std::string& name, const std::vector<uint8_t>& image);
  /// Memory, images, the package's tensors and layers, a step per descriptor (pkg read and validated).
  void prepare();
  Step prepareStep(const package::Descriptor& d);
  /// A view of the device memory a reference names (its bytes were checked to lie in one element space).
  Tensor viewOf(const package::TensorRef& r);

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
  /// Weights (input i) as float32: float16 ones widened once into s.w32.
  static const float* weightsF32(Step& s, int i);

  // ---- executor.cpp: the executor
  void exec(Step& s);
  /// exec for a dynamic layer: its inputs' dims read from their extents (each within its capacity), its outputs' from
  /// its kind's shape function (a dim beyond the capacity stops the run), their extents written, then the kind runs.
  void execDynamic(Step& s);
  /// Output j of dynamic step s at dims y (within its capacity, else the run stops): its reference, its shape and
  /// its extent. execDynamic sets them from the kind's shape function; a kind whose count is known only once it ran
  /// (nms) sets them again.
  void setOutputDims(Step& s, int j, const Shape& y);
  /// exec for a step with channel-last references: its inputs transposed to the layer's layout first, its output
  /// transposed into memory after.
  void execChannelLast(Step& s);
  /// The `count` steps from seq `first` (a control layer's region), each control layer among them running its own.
  void runRegion(size_t first, size_t count);
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
  /// Input i as float32 (float16 widened into scratch), and the float32 buffer the output is computed in (the output
  /// itself for float32, else scratch that store() rounds into it).
  const float* inF(Step& s, int i);
  float* outF(Step& s);
  /// Finishes a float layer: the activation applied where the kernel has no epilogue (Step::post_act), float16
  /// outputs rounded from outF's buffer.
  void store(Step& s);

  // ---- exec_pow2.cpp: the int8-pow2 forms
  /// int8-pow2: every slot back to its calibrated range (as loaded; Runtime::resetState).
  void resetPow2();
  /// The int8-pow2 form of a layer, if it is one: its table read once (the reader validated it).
  bool preparePow2(Step& s);
  void execPow2(Step& s);

  // ---- gear_state.cpp: the AIPP stages' state
  /// What the translator fixed for the AIPP stage of step s: the output it writes, the frame's bytes per image,
  /// padding_value. Its parameter block is aippBlockSize(n) bytes. The bytes per image are the frame input's
  /// (max_src_image_size for a dynamic stage) or, with `given` and a smaller frame set (setInput), that frame's.
  static kernels::AippSetup aippSetup(const Step& s, bool given = true);
  /// The dynamic AIPP stage that reads the frame input at `address`, if any.
  Step* dynamicAippStage(uint64_t address);
  /// setInput of the frame of a dynamic AIPP stage, which may hold fewer bytes per image than max_src_image_size.
  void setAippFrame(Step& stage, std::vector<RuntimeTensor>::iterator it, const std::string& name, const Shape& shape,
                    const void* data);
};

/// How the runtime runs a layer kind: `prepare` reads what the descriptor fixes once, when the package loads (null:
/// nothing to read, and the fused activation is applied as the output is stored: Step::post_act), `run` executes
/// it on the kernels. The int8-pow2 forms are exec_pow2.cpp's, ahead of these.
struct KindExec {
  void (*prepare)(Runtime::Impl&, Runtime::Impl::Step&);
  void (*run)(Runtime::Impl&, Runtime::Impl::Step&);
  /// The kinds that take dynamic tensors (package::layerTakesDynamic): the outputs' dims from the inputs' (s.shapes)
  /// and the parameter words, at run time.
  void (*shape)(const Runtime::Impl::Step&, std::vector<Shape>& outputs) = nullptr;
};

/// The execution of every kind, named as its enumerator (kind_exec::kConv) and defined in its family's file. A kind
/// of layer_kinds.def without one fails to link (the table of executor.cpp takes every kind's address), as a switch
/// without its case fails to build.
namespace kind_exec {
#define NPUC_LAYER_KIND(E, ...) extern const KindExec E;
#include "package/layer_kinds.def"
#undef NPUC_LAYER_KIND
}  // namespace kind_exec

/// The execution of a kind the reader accepted (executor.cpp: a table indexed by the kind's code).
const KindExec& kindExec(LayerKind k);

}  // namespace npuc
