// Declarations of the built-in passes (one .cpp each).
#pragma once

#include "passes/pass.hpp"

namespace npuc::passes {

/// Records every type the op shape functions can derive (constants used for shape operands).
class InferShapesPass : public Pass {
 public:
  const char* name() const override { return "infer-shapes"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Evaluates nodes whose inputs are all constant (and Shape/Size of statically shaped values) with the
/// reference engine and replaces their outputs by constants.
class FoldConstantsPass : public Pass {
 public:
  const char* name() const override { return "fold-constants"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Replaces an If whose condition is a constant by the nodes of the branch it takes (inline_if.cpp).
class InlineIfPass : public Pass {
 public:
  const char* name() const override { return "inline-if"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Types each If / Loop / Scan body for what its node passes it and resolves it (specialize_bodies.cpp): static
/// shapes inside bodies, for the translator's control layers.
class SpecializeBodiesPass : public Pass {
 public:
  const char* name() const override { return "specialize-bodies"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Removes nodes whose outputs nothing uses, and unused constants.
class DeadCodeEliminationPass : public Pass {
 public:
  const char* name() const override { return "dce"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Folds an inference BatchNormalization into the Conv before it (constant weights and parameters).
class FoldBatchNormPass : public Pass {
 public:
  const char* name() const override { return "fold-batchnorm"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// fold-batchnorm's chains alone: a chain of per-channel Mul / Div / Add / Sub by constants becomes one
/// BatchNormalization, nothing is folded into a convolution (translate's fold_batchnorm = false: TIDL's
/// foldBnInConv2D = 0). Not in a default pipeline.
class AffineChainsPass : public Pass {
 public:
  const char* name() const override { return "affine-chains"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// An inference BatchNormalization (constant parameters, a rank-4 float32 input) that no Conv absorbed becomes a
/// depthwise 1x1 Conv: weight a = scale / sqrt(var + eps), bias beta - mean·a (in double, rounded once). The
/// integer numerics' form of a channel affine (TIDL's BatchNorm layer); not in a default pipeline.
class BatchNormToConvPass : public Pass {
 public:
  const char* name() const override { return "batchnorm-to-conv"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// A lone Mul or Add of a rank-4 float32 activation by a constant that is one value or one per channel (what
/// fold-batchnorm leaves: no Conv before it, no chain) becomes a depthwise 1x1 Conv — Mul: weight k, no bias; Add:
/// weight 1, bias k. int8-pow2's form of TIDL's per-channel scale (its BatchNorm layer); not in a default pipeline.
class ScaleToConvPass : public Pass {
 public:
  const char* name() const override { return "scale-to-conv"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// A constant Pad in front of Conv / AveragePool / MaxPool becomes their padding, when that is exact.
class FoldPadPass : public Pass {
 public:
  const char* name() const override { return "fold-pad"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Transpose(Transpose(x)) reads x with the perms composed; an identity Transpose is removed (channel-last imports).
class FoldTransposesPass : public Pass {
 public:
  const char* name() const override { return "fold-transposes"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Reshape(Reshape(x)) reads x with the outer shape; a Reshape to its input's shape is removed.
class FoldReshapesPass : public Pass {
 public:
  const char* name() const override { return "fold-reshapes"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// ceil_mode pooling becomes explicit end pads with the same output, when that is exact.
class CanonicalizePoolPass : public Pass {
 public:
  const char* name() const override { return "canonicalize-pool"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Swish, Mish, HardSwish, GlobalAveragePool and Flatten from the op sequences exporters emit for them.
class DetectPatternsPass : public Pass {
 public:
  const char* name() const override { return "detect-patterns"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// An activation that is the only consumer of a Conv/ConvTranspose/Gemm/MatMul is fused into it (ai.npuc twin).
class FuseActivationsPass : public Pass {
 public:
  const char* name() const override { return "fuse-activations"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// The reverse for the activations an int8 layer cannot apply itself (all but Relu and Clip: LeakyRelu, Sigmoid,
/// Tanh, HardSigmoid, HardSwish, Swish, Mish): each becomes its own node again after its Conv / Gemm / MatMul, so the
/// layer is an integer product and the activation a look-up table between int8 tensors (int8-affine;
/// docs/numerics.md "Look-up tables").
class SplitActivationsPass : public Pass {
 public:
  const char* name() const override { return "split-activations"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Replaces Relu6 (Clip(0, 6), standalone or fused) by Relu (the translator's -RELU6toRELU).
class Relu6ToReluPass : public Pass {
 public:
  const char* name() const override { return "relu6-to-relu"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// Cross-layer equalization of consecutive convolutions (through Relu / LeakyRelu) for per-tensor int8 weights: the
/// same function, each channel's weight ranges made equal across the pair (equalize.cpp); not in a default pipeline.
class EqualizeCrossLayerPass : public Pass {
 public:
  const char* name() const override { return "equalize-cross-layer"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

/// npuc's own forms written back as standard ONNX where ONNX has the ops (fused activations, Swish, Mish, HardSwish
/// below opset 14, Focus, MaxPool padded with a value), for models saved for other tools; not in a default pipeline.
class ToStandardOnnxPass : public Pass {
 public:
  const char* name() const override { return "to-standard-onnx"; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

}  // namespace npuc::passes
