// Recurrent layers: ONNX's RNN, GRU and LSTM over a sequence, every direction, activation set, sequence length,
// initial state and (LSTM) peephole. IR-free: the engine calls it, and a package form can call the same code.
// The scalar reference below is the specification (docs/numerics.md, "Recurrent layers"): x·Wᵀ and h·Rᵀ each summed
// on their own in ascending index order with one fmaf per term from +0 (the GEMM's rule, gemm.hpp), then
// (x·Wᵀ + h·Rᵀ) + Wb + Rb. recurrentFast computes the same bits with the products as GEMMs.
#pragma once

#include "kernels/layers.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace npuc {
class ThreadPool;
}

namespace npuc::kernels {

enum class RnnCell : uint8_t { kRnn, kGru, kLstm };

/// Gates per hidden unit (RNN 1, GRU 3: z r h, LSTM 4: i o f c) and activations per direction (1, 2: f g, 3: f g h).
int rnnGates(RnnCell c);
int rnnActivations(RnnCell c);

/// An activation of a recurrent layer: an element-wise op of the table (Relu, Tanh, Sigmoid, LeakyRelu,
/// ThresholdedRelu, HardSigmoid, Elu, Softsign, Softplus) or one of ONNX's two recurrent-only forms.
struct RnnActivation {
  enum class Kind : uint8_t { kUnary, kAffine, kScaledTanh } kind = Kind::kUnary;
  UnaryOp op = UnaryOp::kTanh;
  float alpha = 0.0f, beta = 0.0f;
  float operator()(float x) const;
};

struct RnnShape {
  RnnCell cell = RnnCell::kLstm;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  int dirs = 1;                   // 2: bidirectional (forward, then reverse)
  bool reverse = false;           // dirs == 1: the one direction runs backwards
  bool batch_major = false;       // ONNX layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden], states [batch, dirs, hidden]
  float clip = 0.0f;              // > 0: gate inputs clamped to [-clip, clip]
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM: f = 1 - i
  std::vector<RnnActivation> acts;   // dirs * rnnActivations(cell), direction by direction
};

/// The tensors, row-major, float32. Optional ones may be null: b (zeros), seq_lens (every sequence full), h0 / c0
/// (zeros), p (LSTM peepholes, zeros), and any output.
struct RnnTensors {
  const float* x = nullptr;        // [seq, batch, input] (batch_major: [batch, seq, input])
  const float* w = nullptr;        // [dirs, gates·hidden, input]
  const float* r = nullptr;        // [dirs, gates·hidden, hidden]
  const float* b = nullptr;        // [dirs, 2·gates·hidden]: Wb then Rb
  const int32_t* seq_lens = nullptr;  // [batch], each in [0, seq]
  const float* h0 = nullptr;       // [dirs, batch, hidden] (batch_major: [batch, dirs, hidden])
  const float* c0 = nullptr;       // LSTM, as h0
  const float* p = nullptr;        // LSTM [dirs, 3·hidden]: i, o, f
  float* y = nullptr;              // [seq, dirs, batch, hidden] (batch_major: [batch, seq, dirs, hidden]); steps past a
                                   // sequence's length are 0
  float* y_h = nullptr;            // the last state, as h0
  float* y_c = nullptr;            // LSTM, as c0
  // The int8 form (int8-affine packages, docs/numerics.md "Recurrent layers in int8"): with xq set, x is int8 codes
  // (real = (xq - zx) · sx) and W, R are int8 per row (real = wq · w_scale[row], rows over dirs · gates · hidden; w and
  // r unused). A gate's products are integer sums, each scaled once: float(Σ (xq − zx) · wq) · (sx · w_scale[row]) and
  // float(Σ qh · rq) · (kRnnStateScale · r_scale[row]), where qh is the state h (and GRU's r ⊙ h) in int8 at
  // 1 / 127: clamp(nearbyint(h · 127), −127, 127); then everything as the float form.
  const int8_t* xq = nullptr;
  int32_t zx = 0;
  float sx = 1.0f;
  const int8_t* wq = nullptr;      // [dirs, gates·hidden, input]
  const int8_t* rq = nullptr;      // [dirs, gates·hidden, hidden]
  const float* w_scale = nullptr;  // [dirs · gates · hidden]
  const float* r_scale = nullptr;
};
/// The int8 form's scale of the state (and of GRU's reset-gated state): 1 / 127.
inline constexpr float kRnnStateScale = 1.0f / 127.0f;
/// A state value in int8 at kRnnStateScale: clamp(nearbyint(v · 127), −127, 127); NaN gives 0.
int8_t rnnStateCode(float v);

namespace detail {
/// The int8 form's integer sums against one int8 matrix m [rows, k] (a direction's W, R, or R's candidate rows):
/// out[r] = Σ_k (v[k] − z) · m[r, k], exact in int32. The reference's loops (QRowsRef), or a form of this CPU's.
class QRows {
 public:
  virtual ~QRows() = default;
  virtual void sums(const int8_t* v, int32_t z, int32_t* out) const = 0;
};
using QRowsMaker = std::unique_ptr<QRows> (*)(const int8_t* m, int64_t rows, int64_t k);
std::unique_ptr<QRows> makeQRowsRef(const int8_t* m, int64_t rows, int64_t k);
/// The int8 form with its sums from `make`'s objects (any exact form gives the reference's bits).
void recurrentQ8(const RnnShape& s, const RnnTensors& t, ThreadPool* pool, QRowsMaker make);
}  // namespace detail

/// The checks both forms make: directions, activations, every sequence length in [0, seq] (kInvalidInput).
void rnnCheck(const RnnShape& s, const RnnTensors& t);
/// Runs the layer. Directions and batch entries are independent: threads split them, and the bits do not depend on
/// the thread count. Throws kInvalidInput for a sequence length outside [0, seq].
void recurrent(const RnnShape& s, const RnnTensors& t, ThreadPool* pool);
/// A layer's W and R packed for the fast form's GEMMs, once for repeated runs with the same weights.
struct RnnPacked;
struct RnnPackedDeleter {
  void operator()(RnnPacked* p) const;
};
using RnnPackedPtr = std::unique_ptr<RnnPacked, RnnPackedDeleter>;
RnnPackedPtr packRecurrent(const RnnShape& s, const float* w, const float* r);

/// The same bits, faster (the int8 form: the reference's, whose integer sums any order gives alike): per direction the input products of every step as one GEMM, then per step the recurrent
/// products of every batch entry as one, the gates element-wise as the reference computes them. `packed`: W and R
/// as packRecurrent packed them (null: packed here). Threads split each GEMM's outputs.
void recurrentFast(const RnnShape& s, const RnnTensors& t, ThreadPool* pool, const RnnPacked* packed = nullptr);

}  // namespace npuc::kernels
