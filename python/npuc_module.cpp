// The Python extension `npuc._npuc` (pybind11) over npuc's public C++ API: the runtime (include/npuc/runtime.hpp)
// and the compiler (include/npuc/model.hpp). numpy arrays come in without a copy (C-contiguous arrays are read in
// place; the runtime copies them once, into device memory) and go out without one (an array over the tensor the
// runtime returns). Long calls release the GIL, so several runtimes run concurrently from Python threads. Errors
// raise npuc.Error (a RuntimeError) carrying npuc's message and its code ("invalid argument", "i/o error", …).
// The Python half of the package (python/npuc/__init__.py) builds Kneron-style inference, evaluation and helpers
// on these.
#include "npuc/model.hpp"
#include "npuc/runtime.hpp"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>

namespace py = pybind11;
using namespace npuc;

void bindBundles(py::module_& m), bindPictures(py::module_& m);  // npuc_bundles.cpp, npuc_pictures.cpp

namespace {

PyObject* g_error = nullptr;  // npuc.Error (a reference the module holds for the interpreter's life: never released at exit)

[[noreturn]] void raise(ErrorCode code, const std::string& msg) { throw Error(code, msg); }

/// numpy's dtype for an npuc element type (bfloat16 has none: it comes out as uint16 bits).
py::dtype numpyDtype(DType t) {
  switch (t) {
    case DType::kF32: return py::dtype("float32");
    case DType::kF16: return py::dtype("float16");
    case DType::kBF16: return py::dtype("uint16");
    case DType::kF64: return py::dtype("float64");
    case DType::kI8: return py::dtype("int8");
    case DType::kU8: return py::dtype("uint8");
    case DType::kI16: return py::dtype("int16");
    case DType::kU16: return py::dtype("uint16");
    case DType::kI32: return py::dtype("int32");
    case DType::kU32: return py::dtype("uint32");
    case DType::kI64: return py::dtype("int64");
    case DType::kU64: return py::dtype("uint64");
    case DType::kBool: return py::dtype("bool");
    default: break;
  }
  raise(ErrorCode::kUnsupported, std::string("no numpy type for ") + std::string(dtypeName(t)));
}

DType npucDtype(const py::dtype& d, const std::string& what) {
  const char k = d.kind();
  const auto n = d.itemsize();
  if (k == 'f' && n == 4) return DType::kF32;
  if (k == 'f' && n == 2) return DType::kF16;
  if (k == 'f' && n == 8) return DType::kF64;
  if (k == 'i' && n == 1) return DType::kI8;
  if (k == 'u' && n == 1) return DType::kU8;
  if (k == 'i' && n == 2) return DType::kI16;
  if (k == 'u' && n == 2) return DType::kU16;
  if (k == 'i' && n == 4) return DType::kI32;
  if (k == 'u' && n == 4) return DType::kU32;
  if (k == 'i' && n == 8) return DType::kI64;
  if (k == 'u' && n == 8) return DType::kU64;
  if (k == 'b') return DType::kBool;
  raise(ErrorCode::kInvalidArgument, what + ": numpy type " + py::cast<std::string>(d.attr("name")) + " has no npuc element type");
}

/// A numpy array as (type, shape, data) read in place; it must be a C-contiguous numpy array in native byte order.
struct ArrayView {
  DType dtype = DType::kUndefined;
  Shape shape;
  const void* data = nullptr;
  py::array keep;  // holds the array while the view is used
};

ArrayView viewOf(const py::handle& obj, const std::string& what) {
  if (!py::isinstance<py::array>(obj))
    raise(ErrorCode::kInvalidArgument, what + ": expected a numpy array, got " + std::string(py::str(obj.get_type().attr("__name__"))));
  py::array a = py::reinterpret_borrow<py::array>(obj);
  constexpr int kAligned = 0x0100;  // NPY_ARRAY_ALIGNED
  if (!(a.flags() & kAligned))
    raise(ErrorCode::kInvalidArgument, what + ": the array is not aligned to its element size (a view at an odd byte offset): pass "
                                              "numpy.array(x) (a copy)");
  if (!(a.flags() & py::array::c_style))
    raise(ErrorCode::kInvalidArgument, what + ": the array is not C-contiguous (a slice or a transpose): pass "
                                              "numpy.ascontiguousarray(x)");
  const char order = a.dtype().byteorder();
  if (order == '>') raise(ErrorCode::kInvalidArgument, what + ": the array is big-endian: pass x.astype(x.dtype.newbyteorder('='))");
  ArrayView v;
  v.dtype = npucDtype(a.dtype(), what);
  for (py::ssize_t i = 0; i < a.ndim(); ++i) v.shape.push_back(static_cast<int64_t>(a.shape(i)));
  v.data = a.data();
  v.keep = a;
  return v;
}

Tensor tensorOf(const py::handle& obj, const std::string& what) {
  ArrayView v = viewOf(obj, what);
  Tensor t(v.dtype, v.shape);
  if (t.nbytes()) std::memcpy(t.raw(), v.data, t.nbytes());
  return t;
}

/// A numpy array over a tensor's bytes (the tensor kept alive by the array).
py::array arrayOf(Tensor t) {
  auto* keep = new Tensor(std::move(t));
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(keep->shape().begin(), keep->shape().end());
  return py::array(numpyDtype(keep->dtype()), shape, keep->raw(), owner);
}

py::dict tensorInfo(const RuntimeTensor& t) {
  py::dict d;
  d["name"] = t.name, d["dtype"] = numpyDtype(t.dtype);
  d["shape"] = py::tuple(py::cast(t.shape)), d["address"] = t.address;
  if (!t.image.format.empty())
    d["image"] = py::dict(py::arg("format") = t.image.format, py::arg("height") = t.image.height, py::arg("width") = t.image.width,
                          py::arg("chw") = t.image.chw);
  if (!t.aipp_for.empty()) d["aipp_for"] = t.aipp_for;
  if (t.dynamic) d["dynamic"] = true;  // (shape is its capacity; outputs come at the run's dims)
  return d;
}

py::list tensorInfos(const std::vector<RuntimeTensor>& v) {
  py::list l;
  for (auto& t : v) l.append(tensorInfo(t));
  return l;
}

py::dict layerInfo(const RuntimeLayer& l) {
  py::dict d;
  d["seq"] = l.seq;
  d["engine"] = l.engine;
  d["index"] = l.index;
  d["kind"] = l.kind;
  d["name"] = l.name;
  d["opexp"] = l.opexp;
  d["onnx_nodes"] = l.onnx_nodes;
  d["output"] = tensorInfo(l.output);
  if (!l.more_outputs.empty()) {  // (a custom layer of several outputs: outputs 1, 2, …)
    py::list more;
    for (const RuntimeTensor& o : l.more_outputs) more.append(tensorInfo(o));
    d["more_outputs"] = more;
    d["output_index"] = l.output_index;  // (in a run's callback: which output "output" is)
  }
  if (l.scale > 0) {
    d["scale"] = l.scale;
    d["zero_point"] = l.zero_point;
  }
  if (!l.float_value.empty()) d["float_value"] = l.float_value;  // (int8-pow2 codes: no fixed scale, output_scale(seq))
  return d;
}

/// npuc::Runtime for Python: closable, refusing a second thread while a call runs (the GIL is released in run).
class PyRuntime {
 public:
  PyRuntime(const std::filesystem::path& package, int threads, bool exact) {
    RuntimeOptions o;
    o.threads = threads;
    o.exact = exact;
    py::gil_scoped_release nogil;
    rt_ = std::make_unique<Runtime>(package, o);
    path_ = package.string();
  }

  Runtime& rt() {
    if (!rt_) raise(ErrorCode::kInvalidArgument, "the runtime is closed");
    return *rt_;
  }

  /// One call at a time per runtime. The thread running it may re-enter with a read (output() from a layer callback);
  /// anything else from a callback, or any call from another thread, is refused.
  struct Busy {
    explicit Busy(PyRuntime& r, bool read = false) : r_(r) {
      if (!r_.busy_.exchange(true)) {
        r_.owner_.store(std::this_thread::get_id());
        return;
      }
      if (r_.owner_.load() == std::this_thread::get_id()) {
        if (!read) raise(ErrorCode::kInvalidArgument, "this call is not allowed inside a layer callback (reading outputs is)");
        nested_ = true;
        return;
      }
      raise(ErrorCode::kInvalidArgument, "the runtime is in use by another thread (one Runtime per thread)");
    }
    ~Busy() {
      if (!nested_) r_.owner_.store(std::thread::id()), r_.busy_ = false;
    }
    PyRuntime& r_;
    bool nested_ = false;
  };

  void setInput(const std::string& name, const py::handle& array) {
    Busy b(*this);
    setInputHeld(name, array);
  }

  /// (the caller holds Busy)
  void setInputHeld(const std::string& name, const py::handle& array) {
    ArrayView v = viewOf(array, "input '" + name + "'");
    Runtime& r = rt();
    py::gil_scoped_release nogil;  // (the view keeps the array alive; the copy needs no Python)
    r.setInput(name, v.dtype, v.shape, v.data);
  }

  /// (the caller holds Busy)
  void setInputs(const py::handle& inputs) {
    if (inputs.is_none()) return;
    if (py::isinstance<py::dict>(inputs)) {
      for (auto item : py::reinterpret_borrow<py::dict>(inputs)) setInputHeld(py::cast<std::string>(item.first), item.second);
      return;
    }
    if (py::isinstance<py::array>(inputs)) {
      if (rt().inputs().size() != 1)
        raise(ErrorCode::kInvalidArgument, "the package has " + std::to_string(rt().inputs().size()) + " inputs: pass a dict name -> array");
      setInputHeld(rt().inputs()[0].name, inputs);
      return;
    }
    if (py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs)) {
      py::sequence seq = py::reinterpret_borrow<py::sequence>(inputs);
      if (seq.size() != rt().inputs().size())
        raise(ErrorCode::kInvalidArgument, "the package has " + std::to_string(rt().inputs().size()) + " inputs, got " + std::to_string(seq.size()));
      for (size_t i = 0; i < seq.size(); ++i) setInputHeld(rt().inputs()[i].name, seq[i]);
      return;
    }
    raise(ErrorCode::kInvalidArgument, "inputs: a dict name -> array, a list of arrays in input order, or one array");
  }

  /// Inputs, run and outputs under one Busy: no other thread's call (close, a gear switch, another run) comes between.
  py::dict run(const py::handle& inputs, const py::object& callback, bool raw) {
    Busy b(*this);
    setInputs(inputs);
    {
      Runtime& r = rt();
      if (callback.is_none()) {
        py::gil_scoped_release nogil;
        r.run();
      } else {
        // The callback runs Python: the GIL is held for the whole run.
        r.run([&](const RuntimeLayer& l, const Tensor& y) { callback(layerInfo(l), arrayOf(y.clone())); });
      }
    }
    std::vector<std::pair<std::string, Tensor>> outs;
    {
      Runtime& r = rt();
      py::gil_scoped_release nogil;
      for (auto& o : r.outputs()) outs.emplace_back(o.name, raw ? r.output(o.name) : r.outputFloat(o.name));
    }
    py::dict out;
    for (auto& [name, t] : outs) out[py::str(name)] = arrayOf(std::move(t));
    return out;
  }

  py::array output(const std::string& name, bool raw) {
    Busy b(*this, true);
    Runtime& r = rt();
    Tensor t;
    {
      py::gil_scoped_release nogil;
      t = raw ? r.output(name) : r.outputFloat(name);
    }
    return arrayOf(std::move(t));
  }

  /// A field's value as the named form takes it (DynamicAippParams::fromFields): integers and format names as they
  /// are, floats in their shortest round-trip form (an integer field refuses them, naming the field).
  static std::string fieldText(const std::string& field, const py::handle& v) {
    if (py::isinstance<py::bool_>(v)) return py::cast<bool>(v) ? "1" : "0";
    if (py::isinstance<py::int_>(v)) return py::cast<std::string>(py::str(v));
    if (py::isinstance<py::float_>(v)) return py::cast<std::string>(py::repr(v));
    if (py::isinstance<py::str>(v)) return py::cast<std::string>(v);
    if (py::hasattr(v, "dtype") && py::hasattr(v, "item")) return fieldText(field, v.attr("item")());  // a numpy scalar
    raise(ErrorCode::kInvalidInput, field + ": must be a number (or a format name for inputFormat), got " +
                                        py::cast<std::string>(py::str(py::type::of(v).attr("__name__"))));
  }

  void setDynamicAipp(const std::string& name, const py::handle& params) {
    Busy b(*this);
    std::vector<uint8_t> block;
    if (py::isinstance<py::dict>(params)) {
      // The seed's field names, as the YAML form lays them out (docs/aipp.md).
      std::vector<std::pair<std::string, std::string>> fields;
      std::vector<std::vector<std::pair<std::string, std::string>>> batch;
      for (auto item : py::reinterpret_borrow<py::dict>(params)) {
        if (!py::isinstance<py::str>(item.first)) raise(ErrorCode::kInvalidInput, "AIPP parameters: field names are strings");
        const std::string key = py::cast<std::string>(item.first);
        if (key != "batch") {
          fields.emplace_back(key, fieldText(key, item.second));
          continue;
        }
        if (!py::isinstance<py::list>(item.second) && !py::isinstance<py::tuple>(item.second))
          raise(ErrorCode::kInvalidInput, "batch: must be a non-empty list of dicts (one kAippDynamicBatchPara per image)");
        py::sequence list = py::reinterpret_borrow<py::sequence>(item.second);
        if (list.size() == 0) raise(ErrorCode::kInvalidInput, "batch: must be a non-empty list of dicts (one kAippDynamicBatchPara per image)");
        for (size_t i = 0; i < list.size(); ++i) {
          const std::string at = "batch[" + std::to_string(i) + "]";
          py::object record = list[i];
          if (!py::isinstance<py::dict>(record)) raise(ErrorCode::kInvalidInput, at + ": must be a dict");
          batch.emplace_back();
          for (auto r : py::reinterpret_borrow<py::dict>(record)) {
            if (!py::isinstance<py::str>(r.first)) raise(ErrorCode::kInvalidInput, at + ": field names are strings");
            const std::string k = py::cast<std::string>(r.first);
            batch.back().emplace_back(k, fieldText(at + "." + k, r.second));
          }
        }
      }
      const DynamicAippParams p = DynamicAippParams::fromFields(fields, batch);
      Runtime& r = rt();
      py::gil_scoped_release nogil;
      r.setDynamicAipp(name, p);
      return;
    }
    if (py::isinstance<py::bytes>(params) || py::isinstance<py::bytearray>(params)) {
      std::string s = py::cast<std::string>(params);
      block.assign(s.begin(), s.end());
    } else {
      ArrayView v = viewOf(params, "AIPP parameters of '" + name + "'");
      if (v.dtype != DType::kU8) raise(ErrorCode::kInvalidArgument, "AIPP parameters of '" + name + "': bytes or a uint8 array");
      block.assign(static_cast<const uint8_t*>(v.data), static_cast<const uint8_t*>(v.data) + shapeNumel(v.shape));
    }
    rt().setDynamicAipp(name, block);
  }

  void setBatch(int64_t n) {
    Busy b(*this);
    rt().setDynamicBatchSize(n);
  }
  void setHW(int64_t h, int64_t w) { Busy b(*this); rt().setDynamicHWSize(h, w); }
  void setInputShape(const std::string& name, const std::vector<int64_t>& shape) {
    Busy b(*this);
    rt().setInputShape(name, shape);
  }

  void resetState() {
    Busy b(*this);
    rt().resetState();
  }
  double outputScale(int seq) {
    Busy b(*this);
    return rt().outputScale(seq);
  }
  void close() {
    Busy b(*this);
    rt_.reset();
  }
  bool closed() const { return !rt_; }
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<Runtime> rt_;
  std::string path_;
  std::atomic<bool> busy_{false};
  std::atomic<std::thread::id> owner_{};  // the thread holding busy_
};

/// npuc::Pipeline for Python: frames in, each frame's outputs out (float32); refuses a second thread while a call runs
/// (the GIL is released in run, where the stages work on their own threads).
class PyPipeline {
 public:
  PyPipeline(const std::filesystem::path& package, int threads, bool exact) : path_(package.string()) {
    RuntimeOptions o;
    o.threads = threads;
    o.exact = exact;
    py::gil_scoped_release nogil;
    pl_ = std::make_unique<Pipeline>(package, o);
  }
  Pipeline& pl() {
    if (!pl_) raise(ErrorCode::kInvalidArgument, "the pipeline of " + path_ + " is closed");
    return *pl_;
  }

  /// frames: a list; each frame a dict name -> array, a list of arrays in input order, or one array (one input).
  py::list run(const py::handle& frames) {
    Busy b(*this);
    Pipeline& p = pl();
    if (!py::isinstance<py::list>(frames) && !py::isinstance<py::tuple>(frames))
      raise(ErrorCode::kInvalidArgument, "frames: a list of frames (each a dict name -> array, a list of arrays or one array)");
    if (py::len(frames) == 0) raise(ErrorCode::kInvalidArgument, "frames: an empty list");
    const auto& ins = p.inputs();
    std::vector<std::vector<Tensor>> in;
    for (py::handle frame : py::reinterpret_borrow<py::sequence>(frames)) {
      const std::string what = "frame " + std::to_string(in.size());
      std::vector<Tensor> f;
      if (py::isinstance<py::dict>(frame)) {
        py::dict d = py::reinterpret_borrow<py::dict>(frame);
        for (const RuntimeTensor& t : ins) {
          if (!d.contains(t.name)) raise(ErrorCode::kInvalidArgument, what + ": no array for input '" + t.name + "'");
          f.push_back(tensorOf(d[py::str(t.name)], what + ", input '" + t.name + "'"));
        }
        if (d.size() != ins.size()) raise(ErrorCode::kInvalidArgument, what + ": " + std::to_string(d.size()) + " arrays for " +
                                                                          std::to_string(ins.size()) + " inputs");
      } else if (py::isinstance<py::array>(frame)) {
        if (ins.size() != 1)
          raise(ErrorCode::kInvalidArgument, what + ": the package has " + std::to_string(ins.size()) + " inputs: pass a dict name -> array");
        f.push_back(tensorOf(frame, what));
      } else if (py::isinstance<py::list>(frame) || py::isinstance<py::tuple>(frame)) {
        py::sequence seq = py::reinterpret_borrow<py::sequence>(frame);
        if (seq.size() != ins.size())
          raise(ErrorCode::kInvalidArgument, what + ": the package has " + std::to_string(ins.size()) + " inputs, got " + std::to_string(seq.size()));
        for (size_t i = 0; i < seq.size(); ++i) f.push_back(tensorOf(seq[i], what + ", input '" + ins[i].name + "'"));
      } else {
        raise(ErrorCode::kInvalidArgument, what + ": a dict name -> array, a list of arrays in input order, or one array");
      }
      in.push_back(std::move(f));
    }
    std::vector<std::vector<Tensor>> got;
    {
      py::gil_scoped_release nogil;
      got = p.run(in);
    }
    py::list out;
    for (auto& frame : got) {
      py::dict d;
      for (size_t o = 0; o < frame.size(); ++o) d[py::str(p.outputs()[o].name)] = arrayOf(std::move(frame[o]));
      out.append(d);
    }
    return out;
  }
  void resetState() {
    Busy b(*this);
    pl().resetState();
  }
  /// Of the last run (copies, taken while no run is in progress): each stage's busy ms, the wall ms, the bytes handed in.
  std::vector<double> stageMs() {
    Busy b(*this);
    return pl().stageMs();
  }
  double wallMs() {
    Busy b(*this);
    return pl().wallMs();
  }
  std::vector<uint64_t> handoffBytes() {
    Busy b(*this);
    return pl().handoffBytes();
  }
  void close() {
    Busy b(*this);
    pl_.reset();
  }
  bool closed() const { return !pl_; }
  const std::string& path() const { return path_; }

 private:
  class Busy {
   public:
    explicit Busy(PyPipeline& p) : p_(p) {
      if (p_.busy_.exchange(true)) raise(ErrorCode::kInvalidArgument, "the pipeline is in use by another thread (one Pipeline per thread)");
    }
    ~Busy() { p_.busy_.store(false); }

   private:
    PyPipeline& p_;
  };
  std::unique_ptr<Pipeline> pl_;
  std::string path_;
  std::atomic<bool> busy_{false};
};

std::map<std::string, Tensor> tensorsByName(const py::handle& inputs, const std::vector<TensorInfo>& names, const std::string& what) {
  std::map<std::string, Tensor> r;
  if (py::isinstance<py::dict>(inputs)) {
    for (auto item : py::reinterpret_borrow<py::dict>(inputs)) {
      std::string n = py::cast<std::string>(item.first);
      r[n] = tensorOf(item.second, what + " '" + n + "'");
    }
  } else if (py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(inputs);
    if (seq.size() != names.size())
      raise(ErrorCode::kInvalidArgument, what + ": the model has " + std::to_string(names.size()) + " inputs, got " + std::to_string(seq.size()));
    for (size_t i = 0; i < seq.size(); ++i) r[names[i].name] = tensorOf(seq[i], what + " '" + names[i].name + "'");
  } else if (py::isinstance<py::array>(inputs) && names.size() == 1) {
    r[names[0].name] = tensorOf(inputs, what + " '" + names[0].name + "'");
  } else {
    raise(ErrorCode::kInvalidArgument, what + ": a dict name -> array, or a list of arrays in input order");
  }
  return r;
}

/// npuc.Error, raised for every npuc::Error with its code and message.
void bindErrors(py::module_& m) {
  g_error = py::exception<Error>(m, "Error", PyExc_RuntimeError).inc_ref().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // Messages may quote file names or ONNX names that are not UTF-8: decoded with replacement, never failing.
      auto text = [](const std::string& s) {
        return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
      };
      py::object exc = py::reinterpret_borrow<py::object>(g_error)(text(e.what()));
      exc.attr("code") = errorCodeName(e.code());
      exc.attr("message") = text(e.message());
      PyErr_SetObject(g_error, exc.ptr());
    }
  });
}

/// The simulated device: Runtime (one package) and Pipeline (packages chained).
void bindRuntime(py::module_& m) {
  py::class_<PyRuntime>(m, "Runtime", "A package on the simulated device (npuc::Runtime)")
      .def(py::init<const std::filesystem::path&, int, bool>(), py::arg("package"), py::arg("threads") = 1, py::arg("exact") = false)
      .def_property_readonly("path", &PyRuntime::path)
      .def_property_readonly("closed", &PyRuntime::closed)
      .def_property_readonly("target", [](PyRuntime& r) { return r.rt().target(); })
      .def_property_readonly("numerics", [](PyRuntime& r) { return r.rt().numerics(); })
      .def_property_readonly("content_hash", [](PyRuntime& r) { return r.rt().contentHash(); })
      .def_property_readonly("inputs", [](PyRuntime& r) { return tensorInfos(r.rt().inputs()); })
      .def_property_readonly("outputs", [](PyRuntime& r) { return tensorInfos(r.rt().outputs()); })
      .def_property_readonly("layers", [](PyRuntime& r) {
        py::list l;
        for (auto& x : r.rt().layers()) l.append(layerInfo(x));
        return l;
      })
      .def_property_readonly("gears", [](PyRuntime& r) {
        py::list l;
        for (auto& g : r.rt().gears())
          l.append(r.rt().gearKind() == "batch" ? py::dict(py::arg("batch") = g.batch)
                                                : py::dict(py::arg("height") = g.height, py::arg("width") = g.width));
        return l;
      })
      .def_property_readonly("gear_kind", [](PyRuntime& r) { return r.rt().gearKind(); })
      .def_property_readonly("shape_ranges", [](PyRuntime& r) {  // (--input_shape LO~HI: set_input, set_input_shape or AIPP select)
        py::list l;
        for (auto& x : r.rt().shapeRanges()) l.append(py::dict(py::arg("value") = x.value, py::arg("dim") = x.dim, py::arg("lo") = x.lo, py::arg("hi") = x.hi, py::arg("also") = x.also));
        return l;
      })
      .def("set_input_shape", &PyRuntime::setInputShape, py::arg("name"), py::arg("shape"))
      .def("set_input", &PyRuntime::setInput, py::arg("name"), py::arg("array"))
      .def("set_dynamic_aipp", &PyRuntime::setDynamicAipp, py::arg("name"), py::arg("params"))
      .def("set_dynamic_batch_size", &PyRuntime::setBatch, py::arg("batch"))
      .def("set_dynamic_hw_size", &PyRuntime::setHW, py::arg("height"), py::arg("width"))
      .def("run", &PyRuntime::run, py::arg("inputs") = py::none(), py::arg("callback") = py::none(), py::arg("raw") = false)
      .def("output", &PyRuntime::output, py::arg("name"), py::arg("raw") = false)
      .def("reset_state", &PyRuntime::resetState,
           "int8-pow2 packages: forget the frames run so far (TIDL's range history back to the calibrated ranges)")
      .def("output_scale", &PyRuntime::outputScale, py::arg("seq"),
           "The scale of layer seq's codes (real = (code - zero_point) * scale): int8-affine / int8-radix the package's; "
           "int8-pow2 2^-q as of the last frame run; 0 for a layer that writes floats")
      .def("close", &PyRuntime::close);

  py::class_<PyPipeline>(m, "Pipeline",
                         "A package's layers groups as a pipeline of simulated cores, one runtime per group on its own "
                         "thread (npuc::Pipeline): run(frames) gives each frame's outputs, Runtime.run's bits")
      .def(py::init<const std::filesystem::path&, int, bool>(), py::arg("package"), py::arg("threads") = 1, py::arg("exact") = false)
      .def_property_readonly("path", &PyPipeline::path)
      .def_property_readonly("closed", &PyPipeline::closed)
      .def_property_readonly("groups", [](PyPipeline& p) { return p.pl().groups(); })
      .def_property_readonly("inputs", [](PyPipeline& p) { return tensorInfos(p.pl().inputs()); })
      .def_property_readonly("outputs", [](PyPipeline& p) { return tensorInfos(p.pl().outputs()); })
      .def_property_readonly("stage_ms", &PyPipeline::stageMs, "of the last run: each stage's mean busy time per frame (ms)")
      .def_property_readonly("wall_ms", &PyPipeline::wallMs, "the last run's wall time (ms)")
      .def_property_readonly("handoff_bytes", &PyPipeline::handoffBytes, "of the last run: the bytes handed into each stage per frame")
      .def("run", &PyPipeline::run, py::arg("frames"),
           "frames: a list, each frame a dict name -> array, a list of arrays in input order, or one array; returns a list "
           "of dicts name -> float32 array, one per frame")
      .def("reset_state", &PyPipeline::resetState,
           "int8-pow2 packages: every stage's range history back to the calibrated ranges (Runtime.reset_state)")
      .def("close", &PyPipeline::close);
}

/// npuc.translate and what it returns.
void bindTranslate(py::module_& m) {
  py::class_<TranslateResult>(m, "TranslateResult", "What npuc.translate wrote (npuc::TranslateResult)")
      .def_readonly("ok", &TranslateResult::ok)
      .def_readonly("dir", &TranslateResult::dir)
      .def_readonly("files", &TranslateResult::files)
      .def_readonly("estimated_us", &TranslateResult::estimated_us)
      .def_property_readonly("single_core_us",
                             [](const TranslateResult& r) {
                               py::dict d;  // engine -> us (None: the engine has no MAC rate for the model's MAC layers)
                               for (auto& [eng, us] : r.single_core_us) d[py::str(eng)] = std::isnan(us) ? py::object(py::none()) : py::object(py::float_(us));
                               return d;
                             })
      .def_property_readonly("multi_core_roi_s",
                             [](const TranslateResult& r) {
                               py::dict d;  // core set -> frames per second (None: n/a)
                               for (auto& [set, v] : r.multi_core_roi_s) d[py::str(set)] = std::isnan(v) ? py::object(py::none()) : py::object(py::float_(v));
                               return d;
                             })
      .def_readonly("activation_bytes", &TranslateResult::activation_bytes)
      .def_readonly("content_hash", &TranslateResult::content_hash)
      .def_readonly("warnings", &TranslateResult::warnings)
      .def_readonly("calibration_samples", &TranslateResult::calibration_samples)
      .def_readonly("quantized", &TranslateResult::quantized)
      .def_property_readonly("errors", [](const TranslateResult& r) {
        py::list l;
        for (auto& e : r.errors)
          l.append(py::dict(py::arg("node_idx") = e.index, py::arg("name") = e.node, py::arg("op_type") = e.op, py::arg("rule_id") = e.rule_id,
                            py::arg("rule") = e.rule, py::arg("actual") = e.actual, py::arg("fix") = e.fix));
        return l;
      })
      .def("__repr__", [](const TranslateResult& r) {
        return std::string("<npuc.TranslateResult ") + (r.ok ? "ok " : "unsupported nodes ") + r.dir.string() + ">";
      });

  m.def(
      "translate",
      [](const std::string& prefix, const std::filesystem::path& onnx, const std::string& target, const std::filesystem::path& out,
         const std::optional<std::filesystem::path>& prepost, const std::optional<std::filesystem::path>& addr,
         const std::optional<std::filesystem::path>& aipp, const py::object& calib, const std::string& calib_method,
         const std::map<std::string, Shape>& input_shapes, bool relu6_to_relu, bool save_opt_onnx, bool save_qdq_onnx,
         bool reuse_memory, bool concat_copies, int threads, const std::vector<int64_t>& dynamic_batch_size,
         const std::vector<std::pair<int64_t, int64_t>>& dynamic_image_size, const std::vector<std::string>& relax,
         const std::optional<std::filesystem::path>& caffe_model, const std::vector<std::string>& keep_float,
         const std::string& equalize, bool bias_correction, const std::vector<std::string>& keep_float16, bool adaround, bool absorb_bias,
         const py::bytes& calib_stats, int stats_pass, const py::bytes& stats_ranges,
         const std::map<std::string, std::vector<std::pair<int64_t, int64_t>>>& input_shape_ranges) -> py::object {
        TranslateOptions o;
        o.input_shape_ranges = input_shape_ranges;
        o.adaround = adaround;
        o.absorb_bias = absorb_bias;
        auto bytesOf = [](const py::bytes& b) {
          const std::string s = b;
          return std::vector<uint8_t>(s.begin(), s.end());
        };
        o.calibration_stats = bytesOf(calib_stats);
        o.keep_float = keep_float;
        o.keep_float16 = keep_float16;
        o.equalize = equalize;
        o.bias_correction = bias_correction;
        o.prefix = prefix;
        o.onnx = onnx;
        if (caffe_model) o.caffe_model = *caffe_model;
        o.target = target;
        o.out_root = out;
        if (prepost) o.prepost = *prepost;
        if (addr) o.addr_map = *addr;
        if (aipp) o.aipp = *aipp;
        o.calib_method = calib_method;
        o.input_shapes = input_shapes;
        o.relu6_to_relu = relu6_to_relu;
        o.save_opt_onnx = save_opt_onnx;
        o.save_qdq_onnx = save_qdq_onnx;
        o.reuse_memory = reuse_memory;
        o.concat_copies = concat_copies;
        o.threads = threads;
        o.dynamic_batch_sizes = dynamic_batch_size;
        o.dynamic_image_sizes = dynamic_image_size;
        o.relax = relax;
        if (!calib.is_none()) {
          if (!py::isinstance<py::dict>(calib)) raise(ErrorCode::kInvalidArgument, "calib: a dict input name -> array (or list of arrays)");
          for (auto item : py::reinterpret_borrow<py::dict>(calib)) {
            std::string n = py::cast<std::string>(item.first);
            if (py::isinstance<py::list>(item.second) || py::isinstance<py::tuple>(item.second)) {
              for (auto x : py::reinterpret_borrow<py::sequence>(item.second)) o.calibration[n].push_back(tensorOf(x, "calib '" + n + "'"));
            } else {
              o.calibration[n].push_back(tensorOf(item.second, "calib '" + n + "'"));
            }
          }
        }
        if (stats_pass != 0) {  // npuc.calibration's shards: one pass of the statistics, as bytes
          const std::vector<uint8_t> ranges = bytesOf(stats_ranges);
          std::vector<uint8_t> r;
          {
            py::gil_scoped_release nogil;
            r = calibrationPass(o, stats_pass, ranges);
          }
          return py::bytes(reinterpret_cast<const char*>(r.data()), r.size());
        }
        TranslateResult r;
        {
          py::gil_scoped_release nogil;
          r = translate(o);
        }
        return py::cast(std::move(r));
      },
      py::arg("prefix"), py::arg("onnx"), py::arg("target") = "drpai", py::arg("out") = "output", py::arg("prepost") = py::none(),
      py::arg("addr") = py::none(), py::arg("aipp") = py::none(), py::arg("calib") = py::none(), py::arg("calib_method") = "minmax",
      py::arg("input_shapes") = std::map<std::string, Shape>{}, py::arg("relu6_to_relu") = false, py::arg("save_opt_onnx") = false,
      py::arg("save_qdq_onnx") = false, py::arg("reuse_memory") = false, py::arg("concat_copies") = false, py::arg("threads") = 0,
      py::arg("dynamic_batch_size") = std::vector<int64_t>{}, py::arg("dynamic_image_size") = std::vector<std::pair<int64_t, int64_t>>{},
      py::arg("relax") = std::vector<std::string>{}, py::arg("caffe_model") = py::none(), py::arg("keep_float") = std::vector<std::string>{},
      py::arg("equalize") = "", py::arg("bias_correction") = false, py::arg("keep_float16") = std::vector<std::string>{},
      py::arg("adaround") = false, py::arg("absorb_bias") = false, py::arg("calib_stats") = py::bytes(), py::arg("stats_pass") = 0,
      py::arg("stats_ranges") = py::bytes(), py::arg("input_shape_ranges") = std::map<std::string, std::vector<std::pair<int64_t, int64_t>>>{},
      "Translates a model for a target (npuc::translate): the package and its reports under out/prefix. keep_float: "
      "layers (node names of the optimized model) an int8 package keeps in float32 (translate --keep-float); keep_float16: "
      "in float16 (translate --keep-float16); adaround: translate --adaround; absorb_bias: translate --absorb-bias; "
      "calib_stats: statistics measured in shards (npuc.calibration.statistics; the samples still go in calib); stats_pass 1 or 2: instead of translating, one pass of "
      "those statistics on calib, as bytes (stats_ranges: pass 1 merged, for pass 2); equalize: "
      "\"relu\" or \"relu6\", cross-layer equalization before calibration (translate --equalize); bias_correction: "
      "translate --bias-correction; input_shape_ranges: name -> [(lo, hi) per dimension] (translate --input_shape LO~HI): "
      "the dimensions no AIPP stage or input_shapes fixes make a package serving every size of the range");
}

/// Calibration statistics in shards (npuc.calibration).
void bindCalibration(py::module_& m) {
  m.def(
      "merge_calibration_stats",
      [](const std::vector<py::bytes>& parts, int pass) {
        std::vector<std::vector<uint8_t>> v;
        for (const py::bytes& b : parts) {
          const std::string s = b;
          v.emplace_back(s.begin(), s.end());
        }
        const std::vector<uint8_t> r = [&] {
          py::gil_scoped_release nogil;
          return mergeCalibrationStats(v, pass);
        }();
        return py::bytes(reinterpret_cast<const char*>(r.data()), r.size());
      },
      py::arg("parts"), py::arg("pass_"),
      "Merges the statistics of shards of one pass (npuc::mergeCalibrationStats; docs/calibration.md).");
}

/// Custom ops, and models run on the reference engine.
void bindModels(py::module_& m) {
  m.def(
      "register_custom_op",
      [](const std::filesystem::path& library) {
        py::list ops;
        for (const CustomOpInfo& op : registerCustomOp(library))
          ops.append(op.domain.empty() ? op.name : op.domain + "." + op.name);
        return ops;
      },
      py::arg("library"),
      "Registers the custom ops of a plugin library (docs/custom-ops.md) for this process: models, translate and "
      "packages then know them. Returns the ops' names (domain.name). Raises npuc.Error naming the library and the op "
      "for a faulty plugin.");

  m.def(
      "model_io",
      [](const std::filesystem::path& onnx, const std::optional<std::filesystem::path>& caffe_model) {
        LoadOptions lo;
        if (caffe_model) lo.caffe_model = *caffe_model;
        Model mdl = Model::load(onnx, lo);
        auto info = [](const std::vector<TensorInfo>& v) {
          py::list l;
          for (auto& t : v) l.append(py::dict(py::arg("name") = t.name, py::arg("dtype") = numpyDtype(t.dtype), py::arg("shape") = py::tuple(py::cast(t.shape))));
          return l;
        };
        return py::make_tuple(info(mdl.inputs()), info(mdl.outputs()));
      },
      py::arg("onnx"), py::arg("caffe_model") = py::none(),
      "The model's inputs and outputs: (list of {name, dtype, shape}, same for outputs); a Caffe network (.prototxt) with "
      "caffe_model= its weights");

  m.def(
      "run_model",
      [](const std::filesystem::path& onnx, const py::handle& inputs, const std::vector<std::string>& capture, int threads,
         const std::optional<std::filesystem::path>& prepost, const std::optional<std::filesystem::path>& caffe_model) {
        std::map<std::string, Tensor> feed;
        LoadOptions lo;
        if (caffe_model) lo.caffe_model = *caffe_model;
        {
          Model probe = Model::load(onnx, [&] {
            LoadOptions l = lo;
            l.require_static_inputs = false;
            return l;
          }());
          feed = tensorsByName(inputs, probe.inputs(), "run_model input");
        }
        if (!prepost)
          for (auto& [n, t] : feed) lo.input_shapes[n] = t.shape();
        std::map<std::string, Tensor> got;
        std::vector<std::string> outs;
        {
          py::gil_scoped_release nogil;
          Model mdl = Model::load(onnx, lo);
          if (prepost) mdl = mdl.withPrePost(*prepost, {});
          for (auto& t : mdl.outputs()) outs.push_back(t.name);
          Session s(mdl, threads);
          std::set<std::string> want(capture.begin(), capture.end());
          want.insert(outs.begin(), outs.end());
          s.run(feed, [&](const std::string& v, const Tensor& t) {
            if (want.count(v)) got[v] = t.clone();
          });
        }
        py::dict r;
        for (auto& n : outs)
          if (got.count(n)) r[py::str(n)] = arrayOf(got[n]);
        for (auto& n : capture) {
          if (!got.count(n)) raise(ErrorCode::kInvalidArgument, "run_model: capture names '" + n + "', which is not a value the model computes");
          r[py::str(n)] = arrayOf(got[n]);
        }
        return r;
      },
      py::arg("onnx"), py::arg("inputs"), py::arg("capture") = std::vector<std::string>{}, py::arg("threads") = 1,
      py::arg("prepost") = py::none(), py::arg("caffe_model") = py::none(),
      "Runs a model on the reference engine: a dict of its outputs (and of the `capture` values) as numpy arrays");
}

}  // namespace

PYBIND11_MODULE(_npuc, m) {
  m.doc() = "npuc's C++ API for Python (use the npuc package, which builds on this module)";
  bindErrors(m);
  bindRuntime(m);
  bindTranslate(m);
  bindModels(m);
  bindCalibration(m);
  bindBundles(m);
  bindPictures(m);
}
