// The engine's op-kernel interface. A Kernel is created once per node (it may pack constant weights then) and
// run many times. Output types are computed by the op's shape function before run() is called.
#pragma once

#include "ir/graph.hpp"
#include "kernels/activation.hpp"
#include "support/error.hpp"
#include "support/tensor.hpp"
#include "support/thread_pool.hpp"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace npuc::engine {

struct KernelCall {
  const ir::Node& node;
  int opset;
  std::vector<Tensor> in;          // undefined Tensor for an omitted optional input
  std::vector<ir::Type> out_types;  // from the op's shape function
  std::vector<Tensor> out;         // filled by the kernel
  ThreadPool* pool;
  /// Where alloc(i) puts output i when placed[i] is defined (a view of the type alloc would allocate): the engine
  /// places a Concat's inputs inside its output so the producers write there (Engine::planConcats).
  std::vector<Tensor> placed = {};
  /// For a Conv whose residual Add the engine fused in (Kernel::fuseResidualAdd, Engine::fuseResidualAdds): the
  /// other operand of the Add, to add to the output; undefined otherwise.
  Tensor residual = {};
  /// Input 0 / output 0 channel-blocked (kernels::Layout::kBlocked8) instead of NCHW, as Engine::blockChannels
  /// planned with the kernel (Kernel::blockInput / blockOutput); never set for a run with a callback.
  bool blocked_in = false;
  bool blocked_out = false;

  bool has(int i) const { return i < static_cast<int>(in.size()) && in[static_cast<size_t>(i)].defined(); }
  const Tensor& input(int i) const;
  /// Allocates output i with its inferred type, its bytes not cleared: the kernel writes every element. A placed
  /// output is that view instead.
  Tensor& alloc(int i);
  /// The same, zero-filled: for kernels that write only some elements (EyeLike, Trilu, ConstantOfShape's zeros).
  Tensor& allocZeroed(int i);
  /// Output i shares the data of `t` (Reshape, Identity, …), viewed with the inferred shape.
  void alias(int i, const Tensor& t);
  int numOutputs() const { return static_cast<int>(out_types.size()); }

  template <typename... Args>
  [[noreturn]] void unsupported(fmt::format_string<Args...> f, Args&&... a) const {
    fail(ErrorCode::kUnsupported, "{}: {}", node.label(), fmt::format(f, std::forward<Args>(a)...));
  }
  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> f, Args&&... a) const {
    fail(ErrorCode::kInvalidInput, "{}: {}", node.label(), fmt::format(f, std::forward<Args>(a)...));
  }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(KernelCall& call) = 0;
  /// Asks the kernel to apply `act` to its output itself (epilogue fusion). Returns false when it cannot.
  virtual bool fuseActivation(const kernels::Activation& act) { return false; }
  /// Asks the kernel to add KernelCall::residual to its output and then apply `post` (an Add that is the only
  /// reader of the output, and the activation after it), when the call has a residual. Returns false when it cannot.
  virtual bool fuseResidualAdd(const kernels::Activation& post) { return false; }
  /// Asks a Conv or a pool to read its input 0 (blockInput) or write its output 0 (blockOutput) channel-blocked in
  /// calls that say so (KernelCall::blocked_in / blocked_out), and to prepare for it. Returns false when it cannot.
  virtual bool blockInput() { return false; }
  virtual bool blockOutput() { return false; }
};

/// Creates the kernel for a node; the graph gives access to constant inputs (weights) for packing.
using KernelFactory = std::function<std::unique_ptr<Kernel>(const ir::Node& node, const ir::Graph& graph)>;

/// A kernel that is a plain function of its call.
class FnKernel : public Kernel {
 public:
  explicit FnKernel(std::function<void(KernelCall&)> fn) : fn_(std::move(fn)) {}
  void run(KernelCall& call) override { fn_(call); }

 private:
  std::function<void(KernelCall&)> fn_;
};

class KernelRegistry {
 public:
  void add(const std::string& op, KernelFactory f, const std::string& domain = "");
  void addFn(const std::string& op, std::function<void(KernelCall&)> fn, const std::string& domain = "");
  const KernelFactory* find(const std::string& domain, const std::string& op) const;
  std::vector<std::string> ops() const;

 private:
  std::map<std::pair<std::string, std::string>, KernelFactory> k_;
};

const KernelRegistry& kernelRegistry();

// One registration function per family (engine/ops_*.cpp).
void registerElementwiseKernels(KernelRegistry& r);
void registerTensorKernels(KernelRegistry& r);
void registerNnKernels(KernelRegistry& r);
void registerReduceKernels(KernelRegistry& r);
void registerIndexingKernels(KernelRegistry& r);
void registerLossKernels(KernelRegistry& r);  // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (ops_loss.cpp)
void registerRecurrentKernels(KernelRegistry& r);  // RNN, GRU, LSTM (ops_recurrent.cpp)
void registerDetectionKernels(KernelRegistry& r);  // NonMaxSuppression (ops_detection.cpp)
void registerSignalKernels(KernelRegistry& r);  // DFT, STFT, the windows, MelWeightMatrix (ops_signal.cpp)
void registerControlFlowKernels(KernelRegistry& r);  // If, Loop, Scan: their bodies run by sub-engines (ops_control_flow.cpp)
void registerQuantKernels(KernelRegistry& r);
void registerPrePostKernels(KernelRegistry& r);
/// The kernel of a registered custom op (plugin, ops_custom.cpp), or nullptr when n is not one.
std::unique_ptr<Kernel> makeCustomKernel(const ir::Node& n, const ir::Graph& g);

}  // namespace npuc::engine
