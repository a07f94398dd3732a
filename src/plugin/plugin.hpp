// Custom-operator plugins (docs/custom-ops.md): loading the shared libraries that implement include/npuc/custom_op.h,
// the process-wide table of the ops they define, and every call into them. Both the compiler (shape inference, the
// reference engine, the target check, the lowering) and the runtime use this one module, so a plugin is loaded,
// checked and called the same way everywhere:
//   - a library is checked when it is registered (a shared library, the entry point, the ABI version, each
//     descriptor's callbacks, ports and parameters), and stays loaded for the life of the process;
//   - every callback runs inside a guard: a failing status, a C++ exception, an output shape out of bounds, a
//     write outside an output's bytes become one Error naming the plugin, the op and the node;
//   - on its first call for each layer and set of shapes, a compute runs twice into outputs pre-filled with two
//     different byte patterns and must give the same bytes (an element it leaves unwritten shows: an Error naming
//     the output and the first such element), and a fast compute is checked against the reference, bit for bit;
//   - a parameter whose definition declares a width (VX_TYPE_INT8 … VX_TYPE_FLOAT16) must hold a value of it.
#pragma once

#include "npuc/custom_op.h"
#include "plugin/param.hpp"
#include "support/error.hpp"
#include "support/tensor.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace npuc::plugin {

/// One registered shared library.
struct Library {
  std::filesystem::path path;  // as registered (absolute)
  std::string file_name;       // its file name: what messages and packages name
  std::string sha256;          // of the file's bytes when it was registered
  uint32_t abi_version = 0;
  void* handle = nullptr;
};

/// A parameter of one node, resolved (from an attribute, a constant input, or a package's record).
struct Param : ParamValue {
  Tensor tensor;  // TENSOR
};

/// The C views of a set of parameters: valid while the parameters live and are not changed.
struct ParamViews {
  std::vector<npuc_param> p;
  std::vector<npuc_tensor> tensors;  // (p[k].tensor points here: not copyable)
  explicit ParamViews(const std::vector<Param>& params);
  ParamViews(const ParamViews&) = delete;
  ParamViews& operator=(const ParamViews&) = delete;
};

/// The element type of a port (DType) for an npuc_elem_type code, or kUndefined.
DType dtypeOf(int32_t code);
/// The code of a DType, or 0 when a port cannot carry it.
int32_t codeOf(DType t);
/// "VX_TYPE_ARRAY" / "ints" / … -> npuc_param_type, or 0.
int32_t paramTypeFromName(const std::string& s);
const char* paramTypeName(int32_t type);  // "bool", "int", "float", "string", "ints", "floats", "tensor"
/// When a declared VX type narrower than the one a value passes as (VX_TYPE_INT8 … UINT64, ENUM, SIZE, CHAR, FLOAT16,
/// FLOAT32) cannot hold v (an integer, or a float when `floating`): its range as messages give it; else "". The
/// rule of CustomOp::checkParams.
std::string outsideDeclaredRange(const char* vx_type, double v, bool floating);

class CustomOp {
 public:
  CustomOp(const Library& lib, const npuc_custom_op& d);
  const std::string& name() const { return name_; }
  const std::string& domain() const { return domain_; }  // "" = ai.onnx
  const std::string& engine() const { return engine_; }
  const std::string& doc() const { return doc_; }
  const Library& library() const { return *lib_; }
  const npuc_custom_op& desc() const { return *d_; }
  int numInputs() const { return static_cast<int>(d_->num_inputs); }
  int numOutputs() const { return static_cast<int>(d_->num_outputs); }
  /// "com.example.ResizeArea" (the name alone in the ai.onnx domain).
  std::string qualifiedName() const;
  /// "custom op 'com.example.ResizeArea' (plugin libresize_area.so)": the front of every message about it.
  std::string label() const;
  /// The element types port i accepts (outputs when `output`), preferred first (never empty).
  std::vector<DType> portTypes(bool output, int i) const;
  /// The type npuc passes to a float port for a float tensor: float32 unless the port takes float16 only, or takes
  /// float16 and `stored` is float16 (a float16 package's activation passes as it is).
  DType floatPortType(bool output, int i, DType stored) const;
  /// The element type a tensor of type t passes to input port i as: t when the port takes it, else for float32 /
  /// float16 the port's float type (floatPortType: float16 device memory widened exactly, float32 rounded to nearest
  /// even); kUndefined when the port cannot take it. Shape inference, the engine, the lowering and the runtime all
  /// use this one rule.
  DType passType(int i, DType t) const;
  /// The highest input index a parameter reads (-1: none): the node has max(numInputs, this + 1) inputs at least.
  int lastParamInput() const;
  /// Refuses (kInvalidInput, naming the op, the node, the parameter, its value and the range) a parameter whose
  /// definition declares a type narrower than the one it passes as (npuc_param_def::vx_type: VX_TYPE_INT8 … UINT64,
  /// ENUM, SIZE, CHAR, FLOAT16, FLOAT32) and whose value (or an item of it) that type cannot hold. infer and Instance
  /// call it, so every path that runs an op (import, the engine, translation, a package's load) checks.
  void checkParams(const std::string& node, const std::vector<Param>& params) const;

  /// Output types (element type, shape) from the inputs (constant inputs with their data; others with null data)
  /// and the parameters, by the plugin's infer callback; checked: ranks 0..8, dims >= 0, sizes below 2^40 bytes,
  /// element types among each output port's.
  std::vector<std::pair<DType, Shape>> infer(const std::string& node, const std::vector<DType>& in_types,
                                             const std::vector<Shape>& in_shapes,
                                             const std::vector<const Tensor*>& in_values,
                                             const std::vector<Param>& params) const;

 private:
  const Library* lib_;
  const npuc_custom_op* d_;
  std::string name_, domain_, engine_, doc_;
};

/// One layer's use of an op: its parameters, its state (init / destroy), and the fast-compute check.
class Instance {
 public:
  Instance(const CustomOp& op, std::string node, std::vector<Param> params);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const CustomOp& op() const { return op_; }
  const std::vector<Param>& params() const { return params_; }
  /// Computes the outputs (allocated by the caller with the inferred types, written here in full) from the inputs
  /// (of the port types). `exact`: the reference compute only. Otherwise the fast compute when the plugin has one.
  /// The first call for each set of shapes checks: each compute it uses runs twice, into outputs pre-filled with
  /// 0x00 and with 0xFF bytes, and must give the same bytes (else an Error naming the output, how many elements
  /// differ and the first: the plugin leaves them unwritten); the fast compute must give the reference's bits. The
  /// extra runs get states of their own from init (destroyed after), so the layer's state sees one call per call.
  /// `out` may hold fewer outputs than the op defines: the others are computed into scratch tensors and dropped.
  void compute(const std::vector<Tensor>& in, std::vector<Tensor>& out, bool exact, int threads);

 private:
  void ensureState(const std::vector<Tensor>& in, const std::vector<Tensor>& out, const std::vector<Shape>& shapes,
                   int threads);
  /// A new state from init for these inputs and outputs (nullptr without init); `made` says whether init ran.
  void* makeState(const std::vector<Tensor>& in, const std::vector<Tensor>& out, int threads, bool& made);
  void releaseState();
  const CustomOp& op_;
  std::string node_;
  std::vector<Param> params_;
  ParamViews views_;  // of params_: what every call's context points at (valid as long as the state lives)
  void* state_ = nullptr;
  bool has_state_ = false;
  std::vector<Shape> state_shapes_;  // the shapes init saw
  std::set<std::vector<Shape>> ref_checked_;   // the input + output shapes compute_ref was checked on (written in full)
  std::set<std::vector<Shape>> fast_checked_;  // the input + output shapes compute_fast was checked on
  std::vector<Shape> spare_for_;                // the input shapes spare_ is for
  std::vector<std::pair<DType, Shape>> spare_;  // the outputs the caller does not keep (infer's)
};

/// Loads and registers the ops of a plugin library. `builtin(domain, name)` says whether npuc itself implements an
/// op (such a name is refused). Registering the same file again (same SHA-256) does nothing. Returns the ops it
/// holds. Errors (kInvalidInput / kIo) name the file and, for a faulty descriptor, the op.
std::vector<const CustomOp*> registerLibrary(const std::filesystem::path& path,
                                             const std::function<bool(const std::string&, const std::string&)>& builtin = {});
/// The registered op of this (domain, name), or nullptr. "ai.onnx" is "".
const CustomOp* find(std::string_view domain, std::string_view name);
/// Every registered op, by (domain, name).
std::vector<const CustomOp*> registered();

}  // namespace npuc::plugin
