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
};

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

/// The same bits, faster: per direction the input products of every step as one GEMM, then per step the recurrent
/// products of every batch entry as one, the gates element-wise as the reference computes them. `packed`: W and R
/// as packRecurrent packed them (null: packed here). Threads split each GEMM's outputs.
void recurrentFast(const RnnShape& s, const RnnTensors& t, ThreadPool* pool, const RnnPacked* packed = nullptr);

}  // namespace npuc::kernels
