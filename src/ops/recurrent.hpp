// The recurrent ops (RNN, GRU, LSTM) as the kernel library describes them: a node's attributes become a
// kernels::RnnShape. One reading for the engine (engine/ops_recurrent.cpp) and the lowering (codegen/lower_nn.cpp), so a
// package runs the activations, clip and directions the engine runs.
#pragma once

#include "ir/graph.hpp"
#include "kernels/recurrent.hpp"

namespace npuc::ops {

/// The cell of a recurrent op ("RNN", "GRU", "LSTM").
kernels::RnnCell rnnCell(const ir::Node& n);

/// The layer a recurrent node computes over an input of shape x ([seq, batch, input], layout 1 [batch, seq, input])
/// with `hidden` units: direction, layout, clip, linear_before_reset, input_forget and the activations (ONNX's names,
/// case-insensitive as ONNX Runtime reads them; each with its alpha / beta taken in order from activation_alpha /
/// activation_beta by the activations that have them; the cell's defaults when none are given). Throws kUnsupported
/// for an activation outside ONNX's list, kInvalidInput for a bad clip or activation count, naming the node.
kernels::RnnShape rnnShape(const ir::Node& n, const Shape& x, int64_t hidden);

}  // namespace npuc::ops
