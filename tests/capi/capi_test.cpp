// The C API (include/npuc/npuc.h): the same bits as npuc::Runtime (outputs in both types, per-layer outputs, the
// package facts), every error path returns its status with a message and never crashes, the last error is per
// thread, two runtimes run concurrently, and the header compiles as C99 (header_c99.c).
#include "npuc/npuc.h"

#include "npuc/model.hpp"
#include "npuc/runtime.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

extern "C" npuc_status c_run_filled(const char* dir, float fill, float* first);
extern "C" npuc_status c_aipp_block(unsigned char* dst, size_t capacity, size_t* written);

using namespace npuc;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = NPUC_SOURCE_DIR;

// Packages of the digits model, made once per test process in a folder unique to the process.
class CApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("capi_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    for (const char* target : {"generic", "drpai"}) {
      TranslateOptions o;
      o.prefix = std::string("digits_") + target;
      o.onnx = kSrc + "/models/digits/digits_cnn.onnx";
      o.target = target;
      o.out_root = root_;
      TranslateResult r = translate(o);
      ASSERT_TRUE(r.ok) << target;
      (std::string(target) == "generic" ? generic_ : drpai_) = r.dir;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static fs::path root_, generic_, drpai_;
};
fs::path CApi::root_, CApi::generic_, CApi::drpai_;

std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// RAII for a C handle in the tests.
struct Handle {
  npuc_runtime* rt = nullptr;
  ~Handle() { npuc_runtime_close(rt); }
};

std::vector<uint8_t> bytesOf(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw());
  return {p, p + t.nbytes()};
}

std::vector<uint8_t> getOutput(npuc_runtime* rt, const char* name, int as_float) {
  size_t need = 0;
  EXPECT_EQ(npuc_runtime_get_output(rt, name, as_float, nullptr, 0, &need), NPUC_STATUS_OK) << npuc_last_error();
  std::vector<uint8_t> v(need);
  size_t written = 0;
  EXPECT_EQ(npuc_runtime_get_output(rt, name, as_float, v.data(), v.size(), &written), NPUC_STATUS_OK)
      << npuc_last_error();
  EXPECT_EQ(written, need);
  return v;
}

struct Recorded {
  std::vector<int> seq;
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<std::string> names;
};

void record(const npuc_layer_info* l, const void* data, size_t bytes, void* user) {
  auto* r = static_cast<Recorded*>(user);
  r->seq.push_back(l->seq);
  r->names.push_back(l->output.name);
  EXPECT_EQ(bytes, l->output.bytes);
  const auto* p = static_cast<const uint8_t*>(data);
  r->bytes.emplace_back(p, p + bytes);
}

// Expects `call` to fail with `want` and a non-empty message naming the function.
#define EXPECT_FAILS(want, call, fn)                                          \
  do {                                                                        \
    npuc_status s_ = (call);                                                  \
    EXPECT_EQ(s_, want) << #call << ": " << npuc_status_name(s_);             \
    std::string e_ = npuc_last_error();                                       \
    EXPECT_NE(e_.find(fn), std::string::npos) << #call << ": '" << e_ << "'"; \
    EXPECT_GT(e_.size(), std::strlen(fn) + 2) << #call;                       \
  } while (0)

}  // namespace

TEST_F(CApi, SameBitsAsTheCppRuntime) {
  for (const fs::path& dir : {generic_, drpai_}) {
    for (int exact : {0, 1}) {
      SCOPED_TRACE(dir.string() + (exact ? " exact" : " fast"));
      Runtime cpp(dir, {.threads = 2, .exact = exact != 0});
      Handle h;
      ASSERT_EQ(npuc_runtime_open(dir.c_str(), 2, exact, &h.rt), NPUC_STATUS_OK) << npuc_last_error();

      // Package facts.
      const char *target = nullptr, *numerics = nullptr, *hash = nullptr;
      ASSERT_EQ(npuc_runtime_target(h.rt, &target), NPUC_STATUS_OK);
      ASSERT_EQ(npuc_runtime_numerics(h.rt, &numerics), NPUC_STATUS_OK);
      ASSERT_EQ(npuc_runtime_content_hash(h.rt, &hash), NPUC_STATUS_OK);
      EXPECT_EQ(cpp.target(), target);
      EXPECT_EQ(cpp.numerics(), numerics);
      EXPECT_EQ(cpp.contentHash(), hash);

      // Inputs and outputs.
      size_t ni = 0, no = 0, nl = 0;
      ASSERT_EQ(npuc_runtime_num_inputs(h.rt, &ni), NPUC_STATUS_OK);
      ASSERT_EQ(npuc_runtime_num_outputs(h.rt, &no), NPUC_STATUS_OK);
      ASSERT_EQ(npuc_runtime_num_layers(h.rt, &nl), NPUC_STATUS_OK);
      ASSERT_EQ(ni, cpp.inputs().size());
      ASSERT_EQ(no, cpp.outputs().size());
      ASSERT_EQ(nl, cpp.layers().size());
      std::vector<Tensor> in;
      for (size_t i = 0; i < ni; ++i) {
        npuc_tensor_info info;
        ASSERT_EQ(npuc_runtime_input_info(h.rt, i, &info), NPUC_STATUS_OK);
        const RuntimeTensor& t = cpp.inputs()[i];
        EXPECT_EQ(t.name, info.name);
        EXPECT_EQ(static_cast<int>(t.dtype), static_cast<int>(info.dtype));
        ASSERT_EQ(static_cast<size_t>(info.rank), t.shape.size());
        EXPECT_EQ(Shape(info.dims, info.dims + info.rank), t.shape);
        for (int k = info.rank; k < NPUC_MAX_RANK; ++k) EXPECT_EQ(info.dims[k], 0);
        EXPECT_EQ(info.elements, static_cast<size_t>(shapeNumel(t.shape)));
        EXPECT_EQ(info.bytes, info.elements * dtypeSize(t.dtype));
        std::vector<float> v = randomFloats(info.elements, 5 + static_cast<uint32_t>(i));
        in.push_back(Tensor::fromVector<float>(t.shape, v));
        ASSERT_EQ(npuc_runtime_set_input(h.rt, info.name, NPUC_DTYPE_FLOAT32, v.data(), v.size() * sizeof(float)),
                  NPUC_STATUS_OK)
            << npuc_last_error();
      }
      for (size_t i = 0; i < no; ++i) {
        npuc_tensor_info info;
        ASSERT_EQ(npuc_runtime_output_info(h.rt, i, &info), NPUC_STATUS_OK);
        EXPECT_EQ(cpp.outputs()[i].name, info.name);
        EXPECT_EQ(static_cast<int>(cpp.outputs()[i].dtype), static_cast<int>(info.dtype));
        EXPECT_EQ(Shape(info.dims, info.dims + info.rank), cpp.outputs()[i].shape);
      }
      for (size_t i = 0; i < nl; ++i) {
        npuc_layer_info l;
        ASSERT_EQ(npuc_runtime_layer_info(h.rt, i, &l), NPUC_STATUS_OK);
        const RuntimeLayer& c = cpp.layers()[i];
        EXPECT_EQ(l.seq, c.seq);
        EXPECT_EQ(l.engine, c.engine);
        EXPECT_EQ(l.index, c.index);
        EXPECT_EQ(l.kind, c.kind);
        EXPECT_EQ(l.name, c.name);
        EXPECT_EQ(l.opexp, c.opexp);
        EXPECT_EQ(l.output.name, c.output.name);
        EXPECT_EQ(Shape(l.output.dims, l.output.dims + l.output.rank), c.output.shape);
      }

      // Run with per-layer callbacks on both sides.
      std::vector<std::vector<uint8_t>> cpp_layers;
      std::vector<Tensor> cpp_out = cpp.run(in, [&](const RuntimeLayer&, const Tensor& y) { cpp_layers.push_back(bytesOf(y)); });
      Recorded rec;
      ASSERT_EQ(npuc_runtime_run(h.rt, record, &rec), NPUC_STATUS_OK) << npuc_last_error();
      ASSERT_EQ(rec.bytes.size(), cpp_layers.size());
      for (size_t i = 0; i < rec.bytes.size(); ++i) {
        EXPECT_EQ(rec.seq[i], static_cast<int>(i));
        EXPECT_EQ(rec.names[i], cpp.layers()[i].output.name);
        EXPECT_EQ(rec.bytes[i], cpp_layers[i]) << "layer " << i;
      }
      for (size_t i = 0; i < no; ++i) {
        const std::string& name = cpp.outputs()[i].name;
        EXPECT_EQ(getOutput(h.rt, name.c_str(), 1), bytesOf(cpp_out[i])) << name << " as float32";
        EXPECT_EQ(getOutput(h.rt, name.c_str(), 0), bytesOf(cpp.output(name))) << name << " in the device type";
      }
      // A run without a callback gives the same outputs.
      ASSERT_EQ(npuc_runtime_run(h.rt, nullptr, nullptr), NPUC_STATUS_OK);
      EXPECT_EQ(getOutput(h.rt, cpp.outputs()[0].name.c_str(), 1), bytesOf(cpp_out[0]));
    }
  }
}

TEST_F(CApi, InputsInTheDeviceTypeEqualFloat32Inputs) {
  Handle a, b;
  ASSERT_EQ(npuc_runtime_open(drpai_.c_str(), 1, 0, &a.rt), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_open(drpai_.c_str(), 1, 0, &b.rt), NPUC_STATUS_OK) << npuc_last_error();
  npuc_tensor_info in, out;
  ASSERT_EQ(npuc_runtime_input_info(a.rt, 0, &in), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_runtime_output_info(a.rt, 0, &out), NPUC_STATUS_OK);
  ASSERT_EQ(in.dtype, NPUC_DTYPE_FLOAT16);
  EXPECT_EQ(npuc_dtype_size(in.dtype), 2u);
  // Float32 values that are exactly representable in float16 (k/8 for small k).
  std::vector<float> f(in.elements);
  std::vector<uint16_t> h(in.elements);
  for (size_t i = 0; i < f.size(); ++i) {
    int k = static_cast<int>(i % 17) - 8;  // -8..8
    f[i] = static_cast<float>(k) / 8.0f;
    // float16 bits of k/8: sign, exponent, mantissa.
    uint16_t bits = 0;
    if (k != 0) {
      int m = k < 0 ? -k : k;  // 1..8 -> value m/8
      int e = 0;
      while ((1 << (e + 1)) <= m) ++e;                   // m = 2^e * (1 + frac)
      uint16_t exp = static_cast<uint16_t>(15 + e - 3);  // /8
      uint16_t mant = static_cast<uint16_t>(((m << 10) >> e) & 0x3FF);
      bits = static_cast<uint16_t>((k < 0 ? 0x8000 : 0) | (exp << 10) | mant);
    }
    h[i] = bits;
  }
  ASSERT_EQ(npuc_runtime_set_input(a.rt, in.name, NPUC_DTYPE_FLOAT32, f.data(), f.size() * 4), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_runtime_set_input(b.rt, in.name, NPUC_DTYPE_FLOAT16, h.data(), h.size() * 2), NPUC_STATUS_OK)
      << npuc_last_error();
  ASSERT_EQ(npuc_runtime_run(a.rt, nullptr, nullptr), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_runtime_run(b.rt, nullptr, nullptr), NPUC_STATUS_OK);
  EXPECT_EQ(getOutput(a.rt, out.name, 0), getOutput(b.rt, out.name, 0));
  EXPECT_EQ(getOutput(a.rt, out.name, 0).size(), out.bytes);
  EXPECT_EQ(getOutput(a.rt, out.name, 1).size(), out.elements * 4);
}

TEST_F(CApi, CallableFromC) {
  float first = 0;
  ASSERT_EQ(c_run_filled(generic_.c_str(), 0.5f, &first), NPUC_STATUS_OK) << npuc_last_error();
  Runtime cpp(generic_);
  Tensor x(DType::kF32, cpp.inputs()[0].shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.5f;
  std::vector<Tensor> y = cpp.run({x});
  float want = y[0].data<float>()[0];
  EXPECT_EQ(std::memcmp(&first, &want, sizeof first), 0);
  EXPECT_EQ(c_run_filled((root_ / "nope").c_str(), 0.5f, &first), NPUC_STATUS_IO);
}

TEST_F(CApi, NullHandlesAndNullPointers) {
  size_t n = 0;
  npuc_tensor_info ti;
  npuc_layer_info li;
  const char* str = nullptr;
  float buf[16];
  npuc_runtime_close(nullptr);  // allowed
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_num_inputs(nullptr, &n), "npuc_runtime_num_inputs");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_num_outputs(nullptr, &n), "npuc_runtime_num_outputs");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_num_layers(nullptr, &n), "npuc_runtime_num_layers");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_input_info(nullptr, 0, &ti), "npuc_runtime_input_info");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_output_info(nullptr, 0, &ti), "npuc_runtime_output_info");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_layer_info(nullptr, 0, &li), "npuc_runtime_layer_info");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_target(nullptr, &str), "npuc_runtime_target");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_numerics(nullptr, &str), "npuc_runtime_numerics");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_content_hash(nullptr, &str), "npuc_runtime_content_hash");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_set_input(nullptr, "input", NPUC_DTYPE_FLOAT32, buf, 4),
               "npuc_runtime_set_input");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_run(nullptr, nullptr, nullptr), "npuc_runtime_run");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_get_output(nullptr, "logits", 1, buf, sizeof buf, &n),
               "npuc_runtime_get_output");

  npuc_runtime* out = reinterpret_cast<npuc_runtime*>(&n);  // must be overwritten with NULL on failure
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_open(nullptr, 1, 0, &out), "npuc_runtime_open");
  EXPECT_EQ(out, nullptr);
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_open(generic_.c_str(), 1, 0, nullptr), "npuc_runtime_open");

  Handle h;
  ASSERT_EQ(npuc_runtime_open(generic_.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK);
  npuc_tensor_info in;
  ASSERT_EQ(npuc_runtime_input_info(h.rt, 0, &in), NPUC_STATUS_OK);
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_num_inputs(h.rt, nullptr), "count is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_num_outputs(h.rt, nullptr), "count is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_num_layers(h.rt, nullptr), "count is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_input_info(h.rt, 0, nullptr), "info is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_output_info(h.rt, 0, nullptr), "info is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_layer_info(h.rt, 0, nullptr), "info is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_target(h.rt, nullptr), "target is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_numerics(h.rt, nullptr), "numerics is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_content_hash(h.rt, nullptr), "hash is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_set_input(h.rt, nullptr, NPUC_DTYPE_FLOAT32, buf, 4),
               "name is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_set_input(h.rt, in.name, NPUC_DTYPE_FLOAT32, nullptr, 4),
               "data is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_get_output(h.rt, nullptr, 1, buf, sizeof buf, &n),
               "name is NULL");
  // dst NULL with a capacity is an error (dst NULL with capacity 0 is the size query).
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_get_output(h.rt, "logits", 1, nullptr, 64, &n),
               "dst is NULL");
}

TEST_F(CApi, BadIndicesNamesTypesAndSizes) {
  Handle h;
  ASSERT_EQ(npuc_runtime_open(drpai_.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK);
  size_t ni = 0, no = 0, nl = 0;
  ASSERT_EQ(npuc_runtime_num_inputs(h.rt, &ni), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_runtime_num_outputs(h.rt, &no), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_runtime_num_layers(h.rt, &nl), NPUC_STATUS_OK);
  npuc_tensor_info ti;
  npuc_layer_info li;
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_input_info(h.rt, ni, &ti), "out of range");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_input_info(h.rt, static_cast<size_t>(-1), &ti), "out of range");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_output_info(h.rt, no, &ti), "out of range");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_layer_info(h.rt, nl, &li), "out of range");

  npuc_tensor_info in, out;
  ASSERT_EQ(npuc_runtime_input_info(h.rt, 0, &in), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_runtime_output_info(h.rt, 0, &out), NPUC_STATUS_OK);
  // An input never set is an error naming it (the device memory holds no input yet), not a run on zeros.
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_run(h.rt, nullptr, nullptr), "never set");
  EXPECT_NE(std::string(npuc_last_error()).find(std::string("'") + in.name + "'"), std::string::npos) << npuc_last_error();
  std::vector<float> f(in.elements + 1, 1.0f);
  const size_t fbytes = in.elements * sizeof(float);
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_set_input(h.rt, "nope", NPUC_DTYPE_FLOAT32, f.data(), fbytes),
               "no input 'nope'");
  EXPECT_NE(std::string(npuc_last_error()).find(in.name), std::string::npos) << "lists the inputs";
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT,
               npuc_runtime_set_input(h.rt, in.name, NPUC_DTYPE_FLOAT32, f.data(), fbytes - 4), "bytes, got");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT,
               npuc_runtime_set_input(h.rt, in.name, NPUC_DTYPE_FLOAT32, f.data(), fbytes + 4), "bytes, got");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT,
               npuc_runtime_set_input(h.rt, in.name, NPUC_DTYPE_FLOAT16, f.data(), fbytes), "bytes, got");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_set_input(h.rt, in.name, NPUC_DTYPE_INT32, f.data(), fbytes),
               "float16 or float32");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT,
               npuc_runtime_set_input(h.rt, in.name, static_cast<npuc_dtype>(99), f.data(), fbytes), "got undefined");
  ASSERT_EQ(npuc_runtime_set_input(h.rt, in.name, NPUC_DTYPE_FLOAT32, f.data(), fbytes), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_runtime_run(h.rt, nullptr, nullptr), NPUC_STATUS_OK);

  std::vector<uint8_t> dst(out.elements * 4);
  size_t written = 12345;
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_get_output(h.rt, "nope", 1, dst.data(), dst.size(), &written),
               "no output 'nope'");
  EXPECT_EQ(written, 12345u) << "not written for an unknown name";
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT,
               npuc_runtime_get_output(h.rt, out.name, 1, dst.data(), out.elements * 4 - 1, &written), "needs");
  EXPECT_EQ(written, out.elements * 4) << "the needed size is reported";
  // The device type (float16) fits in half the bytes.
  EXPECT_EQ(npuc_runtime_get_output(h.rt, out.name, 0, dst.data(), out.bytes, &written), NPUC_STATUS_OK);
  EXPECT_EQ(written, out.bytes);
  EXPECT_EQ(npuc_runtime_get_output(h.rt, out.name, 1, dst.data(), dst.size(), nullptr), NPUC_STATUS_OK);
}

TEST_F(CApi, BadPackages) {
  npuc_runtime* rt = nullptr;
  EXPECT_FAILS(NPUC_STATUS_IO, npuc_runtime_open((root_ / "does_not_exist").c_str(), 1, 0, &rt), "not a package");
  EXPECT_EQ(rt, nullptr);
  fs::create_directories(root_ / "empty");
  EXPECT_FAILS(NPUC_STATUS_IO, npuc_runtime_open((root_ / "empty").c_str(), 1, 0, &rt), "manifest.json");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_open(generic_.c_str(), 0, 0, &rt), "threads");
  EXPECT_EQ(rt, nullptr);

  // A damaged weight file: one byte flipped.
  fs::path damaged = root_ / "damaged";
  fs::copy(generic_, damaged, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::path weights;
  for (auto& e : fs::directory_iterator(damaged))
    if (e.path().filename().string().ends_with("_weight.dat")) weights = e.path();
  ASSERT_FALSE(weights.empty());
  {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(10);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x55);
    f.seekp(10);
    f.write(&c, 1);
  }
  EXPECT_FAILS(NPUC_STATUS_INVALID_INPUT, npuc_runtime_open(damaged.c_str(), 1, 0, &rt), "npuc_runtime_open");
  EXPECT_NE(std::string(npuc_last_error()).find("_weight.dat"), std::string::npos) << npuc_last_error();
  EXPECT_EQ(rt, nullptr);

  // A truncated manifest.
  fs::path truncated = root_ / "truncated";
  fs::copy(generic_, truncated, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::resize_file(truncated / "manifest.json", fs::file_size(truncated / "manifest.json") / 2);
  EXPECT_FAILS(NPUC_STATUS_INVALID_INPUT, npuc_runtime_open(truncated.c_str(), 1, 0, &rt), "manifest.json");
  EXPECT_EQ(rt, nullptr);
}

TEST_F(CApi, ACallbackCannotReenterItsRuntime) {
  Handle h;
  ASSERT_EQ(npuc_runtime_open(generic_.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK);
  struct Ctx {
    npuc_runtime* rt;
    std::vector<npuc_status> got;
    std::string msg;
  } ctx{h.rt, {}, {}};
  npuc_tensor_info in;
  ASSERT_EQ(npuc_runtime_input_info(h.rt, 0, &in), NPUC_STATUS_OK);
  const std::vector<float> x(in.elements, 0.5f);
  ASSERT_EQ(npuc_runtime_set_input(h.rt, in.name, NPUC_DTYPE_FLOAT32, x.data(), x.size() * sizeof(float)), NPUC_STATUS_OK);
  auto cb = [](const npuc_layer_info*, const void*, size_t, void* user) {
    auto* c = static_cast<Ctx*>(user);
    float buf[64];
    c->got.push_back(npuc_runtime_get_output(c->rt, "logits", 1, buf, sizeof buf, nullptr));
    c->msg = npuc_last_error();
  };
  ASSERT_EQ(npuc_runtime_run(h.rt, cb, &ctx), NPUC_STATUS_OK);
  ASSERT_FALSE(ctx.got.empty());
  for (npuc_status s : ctx.got) EXPECT_EQ(s, NPUC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(ctx.msg.find("in use"), std::string::npos) << ctx.msg;
  // After the run the runtime is free again.
  size_t written = 0;
  EXPECT_EQ(npuc_runtime_get_output(h.rt, "logits", 1, nullptr, 0, &written), NPUC_STATUS_OK) << npuc_last_error();
}

TEST_F(CApi, LastErrorIsPerThread) {
  size_t n;
  EXPECT_EQ(npuc_runtime_num_inputs(nullptr, &n), NPUC_STATUS_INVALID_ARGUMENT);
  std::string mine = npuc_last_error();
  std::string theirs_before, theirs_after;
  std::thread t([&] {
    theirs_before = npuc_last_error();
    npuc_runtime* rt = nullptr;
    npuc_runtime_open("/nonexistent/npuc/package", 1, 0, &rt);
    theirs_after = npuc_last_error();
  });
  t.join();
  EXPECT_EQ(theirs_before, "");
  EXPECT_NE(theirs_after.find("npuc_runtime_open"), std::string::npos) << theirs_after;
  EXPECT_EQ(npuc_last_error(), mine);
  // Successful calls leave it unchanged.
  EXPECT_EQ(npuc_status_name(NPUC_STATUS_OK), std::string("ok"));
  Handle h;
  ASSERT_EQ(npuc_runtime_open(generic_.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK);
  EXPECT_EQ(npuc_last_error(), mine);
}

TEST_F(CApi, TwoRuntimesInTwoThreads) {
  // Expected outputs, computed serially.
  const std::vector<fs::path> dirs = {generic_, drpai_};
  constexpr int kRuns = 8;
  auto inputFor = [](int thread, int run, size_t n) { return randomFloats(n, static_cast<uint32_t>(100 * thread + run)); };
  std::vector<std::vector<std::vector<uint8_t>>> want(2);
  for (int t = 0; t < 2; ++t) {
    Runtime cpp(dirs[static_cast<size_t>(t)], {.threads = 2});
    for (int r = 0; r < kRuns; ++r) {
      std::vector<float> v = inputFor(t, r, static_cast<size_t>(shapeNumel(cpp.inputs()[0].shape)));
      std::vector<Tensor> y = cpp.run({Tensor::fromVector<float>(cpp.inputs()[0].shape, v)});
      want[static_cast<size_t>(t)].push_back(bytesOf(y[0]));
    }
  }
  std::vector<std::vector<std::vector<uint8_t>>> got(2);
  std::vector<std::string> errors(2);
  auto work = [&](int t) {
    npuc_runtime* rt = nullptr;
    if (npuc_runtime_open(dirs[static_cast<size_t>(t)].c_str(), 2, 0, &rt) != NPUC_STATUS_OK) {
      errors[static_cast<size_t>(t)] = npuc_last_error();
      return;
    }
    npuc_tensor_info in, out;
    npuc_runtime_input_info(rt, 0, &in);
    npuc_runtime_output_info(rt, 0, &out);
    for (int r = 0; r < kRuns; ++r) {
      std::vector<float> v = inputFor(t, r, in.elements);
      std::vector<uint8_t> y(out.elements * 4);
      if (npuc_runtime_set_input(rt, in.name, NPUC_DTYPE_FLOAT32, v.data(), v.size() * 4) != NPUC_STATUS_OK ||
          npuc_runtime_run(rt, nullptr, nullptr) != NPUC_STATUS_OK ||
          npuc_runtime_get_output(rt, out.name, 1, y.data(), y.size(), nullptr) != NPUC_STATUS_OK) {
        errors[static_cast<size_t>(t)] = npuc_last_error();
        break;
      }
      got[static_cast<size_t>(t)].push_back(std::move(y));
    }
    npuc_runtime_close(rt);
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (size_t t = 0; t < 2; ++t) {
    EXPECT_EQ(errors[t], "");
    EXPECT_EQ(got[t], want[t]) << "thread " << t;
  }
}

TEST(CApiStatic, NamesSizesAndVersion) {
  EXPECT_STREQ(npuc_version(), NPUC_VERSION);
  EXPECT_STREQ(npuc_status_name(NPUC_STATUS_INVALID_ARGUMENT), "invalid_argument");
  EXPECT_STREQ(npuc_status_name(NPUC_STATUS_INVALID_INPUT), "invalid_input");
  EXPECT_STREQ(npuc_status_name(NPUC_STATUS_UNSUPPORTED), "unsupported");
  EXPECT_STREQ(npuc_status_name(NPUC_STATUS_IO), "io");
  EXPECT_STREQ(npuc_status_name(NPUC_STATUS_INTERNAL), "internal");
  EXPECT_STREQ(npuc_status_name(NPUC_STATUS_OUT_OF_MEMORY), "out_of_memory");
  EXPECT_STREQ(npuc_status_name(static_cast<npuc_status>(42)), "unknown");
  for (int d = NPUC_DTYPE_FLOAT32; d <= NPUC_DTYPE_BOOL; ++d) {
    EXPECT_EQ(npuc_dtype_name(static_cast<npuc_dtype>(d)), dtypeName(static_cast<DType>(d)));
    EXPECT_EQ(npuc_dtype_size(static_cast<npuc_dtype>(d)), dtypeSize(static_cast<DType>(d)));
  }
  EXPECT_STREQ(npuc_dtype_name(static_cast<npuc_dtype>(-3)), "undefined");
  EXPECT_EQ(npuc_dtype_size(NPUC_DTYPE_UNDEFINED), 0u);
  EXPECT_EQ(npuc_dtype_size(static_cast<npuc_dtype>(14)), 0u);  // DType::kString is not a C dtype
}

namespace {

// Dynamic AIPP through the C API: the same bits as npuc::Runtime::setDynamicAipp; a broken block names its rule.
TEST(CApiAipp, SetDynamicAipp) {
  fs::path root = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("capi_aipp_" + std::to_string(::getpid()));
  fs::create_directories(root);
  fs::path cfg = root / "dyn.cfg";
  std::ofstream(cfg) << "aipp_op {\n aipp_mode: dynamic\n max_src_image_size: 3072\n}\n";
  TranslateOptions o;
  o.prefix = "aipp";
  o.onnx = kSrc + "/tests/data/aipp/aipp_net.onnx";
  o.target = "drpai";
  o.out_root = root;
  o.aipp = cfg;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  // kAippDynamicPara for one 32x32 RGB888_U8 image: inputFormat 3, batchNum 1, srcImageSizeW/H 32,
  // dtcPixelVarReciChn0..2 = 1/255 (float16 0x1C04).
  std::vector<uint8_t> block(160, 0);
  block[0] = 3, block[4] = 1, block[8] = 32, block[12] = 32;
  for (size_t c = 0; c < 3; ++c) block[136 + 2 * c] = 0x04, block[137 + 2 * c] = 0x1C;
  std::vector<uint8_t> frame(3072);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>(i * 7);
  std::vector<float> mask(1024, 0.25f);

  Runtime cpp(r.dir);
  cpp.setInput("image", [&] { Tensor t(DType::kU8, {1, 3072}); std::memcpy(t.raw(), frame.data(), frame.size()); return t; }());
  cpp.setInput("mask", [&] { Tensor t(DType::kF32, {1, 1, 32, 32}); std::memcpy(t.raw(), mask.data(), 4096); return t; }());
  cpp.setDynamicAipp("image", block);
  cpp.run();
  std::vector<uint8_t> want = bytesOf(cpp.output("out"));

  Handle h;
  ASSERT_EQ(npuc_runtime_open(r.dir.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_set_input(h.rt, "image", NPUC_DTYPE_UINT8, frame.data(), frame.size()), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_set_input(h.rt, "mask", NPUC_DTYPE_FLOAT32, mask.data(), mask.size() * 4), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_set_dynamic_aipp(h.rt, "image", block.data(), block.size()), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_run(h.rt, nullptr, nullptr), NPUC_STATUS_OK) << npuc_last_error();
  std::vector<uint8_t> got(want.size());
  ASSERT_EQ(npuc_runtime_get_output(h.rt, "out", 0, got.data(), got.size(), nullptr), NPUC_STATUS_OK) << npuc_last_error();
  EXPECT_EQ(got, want);

  block[12] = 30;  // 32x30 gives a 32x30 image for a 32x32 input
  EXPECT_EQ(npuc_runtime_set_dynamic_aipp(h.rt, "image", block.data(), block.size()), NPUC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npuc_last_error()).find("aipp.output_size"), std::string::npos) << npuc_last_error();
  EXPECT_EQ(npuc_runtime_set_dynamic_aipp(h.rt, "image", block.data(), 100), NPUC_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(npuc_runtime_set_dynamic_aipp(nullptr, "image", block.data(), block.size()), NPUC_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(npuc_runtime_set_dynamic_aipp(h.rt, "image", nullptr, 0), NPUC_STATUS_INVALID_ARGUMENT);
  fs::remove_all(root);
}

// Issue 47: the block field by field (the seed's names) gives the raw block's bytes and outputs; a frame smaller
// than max_src_image_size holding the same picture gives the same outputs.
TEST(CApiAipp, FieldSettersAndSmallFrames) {
  fs::path root = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("capi_aipp_fields_" + std::to_string(::getpid()));
  fs::create_directories(root);
  fs::path cfg = root / "dyn.cfg";
  std::ofstream(cfg) << "aipp_op {\n aipp_mode: dynamic\n max_src_image_size: 4096\n}\n";
  TranslateOptions o;
  o.prefix = "aipp";
  o.onnx = kSrc + "/tests/data/aipp/aipp_net.onnx";
  o.target = "generic";
  o.out_root = root;
  o.aipp = cfg;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  std::vector<uint8_t> block(160, 0);  // one 32x32 RGB888_U8 image, dtcPixelVarReciChn0..2 = 1/255 (float16 0x1C04)
  block[0] = 3, block[4] = 1, block[8] = 32, block[12] = 32;
  for (size_t c = 0; c < 3; ++c) block[136 + 2 * c] = 0x04, block[137 + 2 * c] = 0x1C;

  npuc_aipp_params* p = nullptr;
  ASSERT_EQ(npuc_aipp_params_create(1, &p), NPUC_STATUS_OK) << npuc_last_error();
  struct PClose {
    npuc_aipp_params* p;
    ~PClose() { npuc_aipp_params_destroy(p); }
  } pclose{p};
  size_t written = 0;
  EXPECT_EQ(npuc_aipp_params_encode(p, nullptr, 0, &written), NPUC_STATUS_INVALID_ARGUMENT);  // nothing set yet
  EXPECT_NE(std::string(npuc_last_error()).find("inputFormat: missing"), std::string::npos) << npuc_last_error();
  ASSERT_EQ(npuc_aipp_params_set(p, "inputFormat", 0, 3), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_aipp_params_set(p, "srcImageSizeW", 0, 32), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_aipp_params_set(p, "srcImageSizeH", 0, 30), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_aipp_params_set(p, "srcImageSizeH", 0, 32), NPUC_STATUS_OK) << npuc_last_error();  // set again: replaced
  for (const char* f : {"dtcPixelVarReciChn0", "dtcPixelVarReciChn1", "dtcPixelVarReciChn2"})
    ASSERT_EQ(npuc_aipp_params_set(p, f, 0, 1.0 / 255), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_aipp_params_set(p, "dtcPixelVarReciChn3", 0, 0), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_aipp_params_encode(p, nullptr, 0, &written), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(written, 160u);
  std::vector<uint8_t> got_block(160);
  ASSERT_EQ(npuc_aipp_params_encode(p, got_block.data(), got_block.size(), &written), NPUC_STATUS_OK) << npuc_last_error();
  EXPECT_EQ(got_block, block);
  std::vector<uint8_t> from_c(160);  // the same from C99 (header_c99.c)
  ASSERT_EQ(c_aipp_block(from_c.data(), from_c.size(), &written), NPUC_STATUS_OK) << npuc_last_error();
  EXPECT_EQ(from_c, block);
  EXPECT_EQ(npuc_aipp_params_encode(p, got_block.data(), 100, &written), NPUC_STATUS_INVALID_ARGUMENT);
  // Unknown, out-of-range and misplaced fields: refused naming the field, the block unchanged.
  struct Bad {
    const char* field;
    size_t image;
    double value;
    const char* message;
  };
  for (const Bad& b : {Bad{"nosuchField", 0, 1, "nosuchField: unknown field"},
                       Bad{"cropSwitch", 0, 300, "cropSwitch: 300 does not fit the field"},
                       Bad{"srcImageSizeW", 0, 1.5, "srcImageSizeW: '1.5' is not an integer"},
                       Bad{"dtcPixelMinChn0", 0, 1e9, "dtcPixelMinChn0: 1000000000 is not a finite number"},
                       Bad{"cropSwitch", 1, 1, "cropSwitch: image 1 is out of range"},
                       Bad{"srcImageSizeW", 1, 32, "srcImageSizeW: image 1 is out of range"}}) {
    SCOPED_TRACE(b.message);
    EXPECT_EQ(npuc_aipp_params_set(p, b.field, b.image, b.value), NPUC_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(npuc_last_error()).find(b.message), std::string::npos) << npuc_last_error();
  }
  ASSERT_EQ(npuc_aipp_params_encode(p, got_block.data(), got_block.size(), &written), NPUC_STATUS_OK) << npuc_last_error();
  EXPECT_EQ(got_block, block);
  npuc_aipp_params* none = nullptr;
  EXPECT_EQ(npuc_aipp_params_create(0, &none), NPUC_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(npuc_aipp_params_create(128, &none), NPUC_STATUS_INVALID_ARGUMENT);

  std::vector<uint8_t> frame(4096);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>(i * 7);
  std::vector<float> mask(1024, 0.25f);
  auto run = [&](bool by_fields, size_t frame_bytes) {
    Handle h;
    EXPECT_EQ(npuc_runtime_open(r.dir.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK) << npuc_last_error();
    if (by_fields) EXPECT_EQ(npuc_runtime_set_dynamic_aipp_params(h.rt, "image", p), NPUC_STATUS_OK) << npuc_last_error();
    else EXPECT_EQ(npuc_runtime_set_dynamic_aipp(h.rt, "image", block.data(), block.size()), NPUC_STATUS_OK) << npuc_last_error();
    EXPECT_EQ(npuc_runtime_set_input(h.rt, "image", NPUC_DTYPE_UINT8, frame.data(), frame_bytes), NPUC_STATUS_OK) << npuc_last_error();
    EXPECT_EQ(npuc_runtime_set_input(h.rt, "mask", NPUC_DTYPE_FLOAT32, mask.data(), mask.size() * 4), NPUC_STATUS_OK) << npuc_last_error();
    EXPECT_EQ(npuc_runtime_run(h.rt, nullptr, nullptr), NPUC_STATUS_OK) << npuc_last_error();
    std::vector<float> y(1024 * 3 + 64);
    size_t n = 0;
    EXPECT_EQ(npuc_runtime_get_output(h.rt, "out", 1, nullptr, 0, &n), NPUC_STATUS_OK);
    y.resize(n / 4);
    EXPECT_EQ(npuc_runtime_get_output(h.rt, "out", 1, y.data(), n, nullptr), NPUC_STATUS_OK) << npuc_last_error();
    return y;
  };
  const std::vector<float> want = run(false, 4096);
  EXPECT_EQ(run(true, 4096), want);
  EXPECT_EQ(run(true, 3072), want);  // exactly the 32x32 RGB picture
  // A frame smaller than the picture: refused, naming both sizes.
  Handle h;
  ASSERT_EQ(npuc_runtime_open(r.dir.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_set_dynamic_aipp_params(h.rt, "image", p), NPUC_STATUS_OK) << npuc_last_error();
  EXPECT_EQ(npuc_runtime_set_input(h.rt, "image", NPUC_DTYPE_UINT8, frame.data(), 3000), NPUC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npuc_last_error()).find("a frame of 3000 bytes per image is smaller than the 32x32 RGB888_U8 source"),
            std::string::npos) << npuc_last_error();
  EXPECT_NE(std::string(npuc_last_error()).find("needs 3072 bytes"), std::string::npos) << npuc_last_error();
  EXPECT_EQ(npuc_runtime_set_input(h.rt, "mask", NPUC_DTYPE_FLOAT32, mask.data(), 100), NPUC_STATUS_INVALID_ARGUMENT);  // not a frame
  fs::remove_all(root);
}

// An output whose shape the data decide (tests/data/dynamic/sorted_boxes.onnx: the boxes whose score passes 0.3, by
// descending score): npuc_runtime_output_dims gives its capacity before a run and each run's dims after it, with the
// dynamic flag; a static output its declared dims, flag 0; the bytes get_output writes agree; bad arguments are errors.
TEST_F(CApi, OutputDimsFollowTheRun) {
  TranslateOptions o;
  o.prefix = "sorted_boxes";
  o.onnx = kSrc + "/tests/data/dynamic/sorted_boxes.onnx";
  o.target = "generic";
  o.out_root = root_;
  const TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Handle h;
  ASSERT_EQ(npuc_runtime_open(r.dir.string().c_str(), 1, 0, &h.rt), NPUC_STATUS_OK) << npuc_last_error();
  int rank = -1, dynamic = -1;
  int64_t dims[NPUC_MAX_RANK] = {};
  ASSERT_EQ(npuc_runtime_output_dims(h.rt, "sorted_boxes", &rank, dims, &dynamic), NPUC_STATUS_OK) << npuc_last_error();
  EXPECT_EQ(dynamic, 1);
  ASSERT_EQ(rank, 2);
  EXPECT_EQ(dims[1], 4);
  const int64_t capacity = dims[0];
  EXPECT_GE(capacity, 32);
  for (int kept : {0, 7, 32}) {
    std::vector<float> scores(32), boxes(32 * 4);
    for (int i = 0; i < 32; ++i) scores[static_cast<size_t>(i)] = i < kept ? 0.9f - 0.01f * static_cast<float>(i) : 0.1f;
    for (size_t i = 0; i < boxes.size(); ++i) boxes[i] = static_cast<float>(i);
    ASSERT_EQ(npuc_runtime_set_input(h.rt, "scores", NPUC_DTYPE_FLOAT32, scores.data(), scores.size() * 4), NPUC_STATUS_OK);
    ASSERT_EQ(npuc_runtime_set_input(h.rt, "boxes", NPUC_DTYPE_FLOAT32, boxes.data(), boxes.size() * 4), NPUC_STATUS_OK);
    ASSERT_EQ(npuc_runtime_run(h.rt, nullptr, nullptr), NPUC_STATUS_OK) << npuc_last_error();
    ASSERT_EQ(npuc_runtime_output_dims(h.rt, "sorted_boxes", &rank, dims, nullptr), NPUC_STATUS_OK) << npuc_last_error();
    ASSERT_EQ(rank, 2);
    EXPECT_EQ(dims[0], kept);
    EXPECT_EQ(dims[1], 4);
    ASSERT_EQ(npuc_runtime_output_dims(h.rt, "sorted", &rank, dims, &dynamic), NPUC_STATUS_OK);
    EXPECT_EQ(rank, 1);
    EXPECT_EQ(dims[0], kept);
    EXPECT_EQ(dynamic, 1);
    std::vector<float> got(static_cast<size_t>(capacity) * 4);
    size_t written = 0;
    ASSERT_EQ(npuc_runtime_get_output(h.rt, "sorted_boxes", 1, got.data(), got.size() * 4, &written), NPUC_STATUS_OK);
    EXPECT_EQ(written, static_cast<size_t>(kept) * 4 * sizeof(float));
    if (kept > 0) {
      EXPECT_EQ(got[0], 0.0f);  // (the best score is box 0's)
    }
  }
  ASSERT_EQ(npuc_runtime_output_dims(h.rt, "n", &rank, dims, &dynamic), NPUC_STATUS_OK);  // a static output
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(dims[0], 1);
  EXPECT_EQ(dynamic, 0);
  EXPECT_EQ(npuc_runtime_output_dims(h.rt, "nope", &rank, dims, nullptr), NPUC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npuc_last_error()).find("sorted_boxes"), std::string::npos);  // (the outputs are listed)
  EXPECT_EQ(npuc_runtime_output_dims(h.rt, "sorted", nullptr, dims, nullptr), NPUC_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(npuc_runtime_output_dims(h.rt, "sorted", &rank, nullptr, nullptr), NPUC_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(npuc_runtime_output_dims(nullptr, "sorted", &rank, dims, nullptr), NPUC_STATUS_INVALID_ARGUMENT);
}

}  // namespace

// Gears through the C API: the gear list, selecting a batch size (the input infos follow), a missing size refused.
TEST(CApiGears, SelectABatchGear) {
  fs::path root = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("capi_gears_" + std::to_string(::getpid()));
  fs::create_directories(root);
  TranslateOptions o;
  o.prefix = "gears";
  o.onnx = kSrc + "/models/digits/digits_cnn.onnx";
  o.target = "generic";
  o.out_root = root;
  o.input_shapes["input"] = {-1, 1, 8, 8};
  o.dynamic_batch_sizes = {1, 3};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Handle h;
  ASSERT_EQ(npuc_runtime_open(r.dir.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK) << npuc_last_error();
  size_t n = 0;
  ASSERT_EQ(npuc_runtime_num_gears(h.rt, &n), NPUC_STATUS_OK);
  ASSERT_EQ(n, 2u);
  int64_t batch = 0, height = -1, width = -1;
  ASSERT_EQ(npuc_runtime_gear(h.rt, 1, &batch, &height, &width), NPUC_STATUS_OK);
  EXPECT_EQ(batch, 3);
  EXPECT_EQ(height, 0);
  npuc_tensor_info info{};
  ASSERT_EQ(npuc_runtime_input_info(h.rt, 0, &info), NPUC_STATUS_OK);
  EXPECT_EQ(info.dims[0], 1);
  ASSERT_EQ(npuc_runtime_set_dynamic_batch_size(h.rt, 3), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_input_info(h.rt, 0, &info), NPUC_STATUS_OK);
  EXPECT_EQ(info.dims[0], 3);
  std::vector<float> x = randomFloats(3 * 64, 5);
  ASSERT_EQ(npuc_runtime_set_input(h.rt, "input", NPUC_DTYPE_FLOAT32, x.data(), x.size() * 4), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_run(h.rt, nullptr, nullptr), NPUC_STATUS_OK) << npuc_last_error();
  std::vector<float> y(30);
  ASSERT_EQ(npuc_runtime_get_output(h.rt, "logits", 1, y.data(), y.size() * 4, nullptr), NPUC_STATUS_OK) << npuc_last_error();
  Runtime cpp(r.dir);
  cpp.setDynamicBatchSize(3);
  Tensor t(DType::kF32, {3, 1, 8, 8});
  std::memcpy(t.raw(), x.data(), x.size() * 4);
  Tensor want = cpp.run({t})[0];
  EXPECT_EQ(std::memcmp(want.raw(), y.data(), 120), 0);
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_set_dynamic_batch_size(h.rt, 2), "the package's gears: 1, 3");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_gear(h.rt, 2, &batch, nullptr, nullptr), "out of range");
  fs::remove_all(root);
}

TEST(CApiRanges, SetAnInputShapeInsideTheRange) {
  fs::path root = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("capi_ranges_" + std::to_string(::getpid()));
  fs::create_directories(root);
  TranslateOptions o;
  o.prefix = "ranges";
  o.onnx = kSrc + "/tests/data/ranges/ranges_net.onnx";
  o.target = "generic";
  o.out_root = root;
  o.input_shape_ranges["x"] = {{1, 1}, {3, 3}, {24, 40}, {20, 36}};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Handle h;
  ASSERT_EQ(npuc_runtime_open(r.dir.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK) << npuc_last_error();
  size_t n = 0;
  ASSERT_EQ(npuc_runtime_num_shape_ranges(h.rt, &n), NPUC_STATUS_OK);
  ASSERT_EQ(n, 2u);
  const char* value = nullptr;
  int64_t dim = 0, lo = 0, hi = 0;
  ASSERT_EQ(npuc_runtime_shape_range(h.rt, 1, &value, &dim, &lo, &hi), NPUC_STATUS_OK);
  EXPECT_STREQ(value, "x");
  EXPECT_EQ(dim, 3);
  EXPECT_EQ(lo, 20);
  EXPECT_EQ(hi, 36);
  const int64_t dims[4] = {1, 3, 27, 33};
  ASSERT_EQ(npuc_runtime_set_input_shape(h.rt, "x", dims, 4), NPUC_STATUS_OK) << npuc_last_error();
  npuc_tensor_info info{};
  ASSERT_EQ(npuc_runtime_input_info(h.rt, 0, &info), NPUC_STATUS_OK);
  EXPECT_EQ(info.dims[2], 27);
  EXPECT_EQ(info.dims[3], 33);
  std::vector<float> x = randomFloats(3 * 27 * 33, 6);
  ASSERT_EQ(npuc_runtime_set_input(h.rt, "x", NPUC_DTYPE_FLOAT32, x.data(), x.size() * 4), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_run(h.rt, nullptr, nullptr), NPUC_STATUS_OK) << npuc_last_error();
  ASSERT_EQ(npuc_runtime_output_info(h.rt, 1, &info), NPUC_STATUS_OK);
  EXPECT_EQ(info.elements, 16u * 7 * 8);  // (27 x 33: 14 x 17 after the stride-2 conv, 7 x 8 pooled)
  std::vector<float> feat(16 * 7 * 8);
  ASSERT_EQ(npuc_runtime_get_output(h.rt, "feat", 1, feat.data(), feat.size() * 4, nullptr), NPUC_STATUS_OK) << npuc_last_error();
  Tensor t(DType::kF32, {1, 3, 27, 33});
  std::memcpy(t.raw(), x.data(), x.size() * 4);
  Runtime cpp(r.dir);
  const Tensor want = cpp.run({t})[1];
  EXPECT_EQ(std::memcmp(want.raw(), feat.data(), feat.size() * 4), 0);
  const int64_t outside[4] = {1, 3, 41, 33};
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_set_input_shape(h.rt, "x", outside, 4), "takes shape [1,3,24~40,20~36]");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_shape_range(h.rt, 2, nullptr, nullptr, nullptr, nullptr), "out of range");
  fs::remove_all(root);
}

TEST(CApiPow2, ResetStateRepeatsTheFirstFrames) {
  // An int8-pow2 package (tidl) keeps the range history of the frames it ran; npuc_runtime_reset_state forgets it.
  fs::path root = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("capi_pow2_" + std::to_string(::getpid()));
  fs::create_directories(root);
  TranslateOptions o;
  o.prefix = "p2";
  o.onnx = kSrc + "/models/digits/digits_cnn.onnx";
  o.target = "tidl";
  o.out_root = root;
  o.calibration["input"] = {readNpyFile(kSrc + "/models/digits/test_x.npy")};
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  Handle h;
  ASSERT_EQ(npuc_runtime_open(r.dir.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK) << npuc_last_error();
  auto frames = [&] {
    std::vector<std::vector<uint8_t>> out;
    for (int f = 0; f < 5; ++f) {
      std::vector<float> x = randomFloats(64, 20 + f);
      for (float& v : x) v *= 0.5f + static_cast<float>(f);  // ranges that move from frame to frame
      EXPECT_EQ(npuc_runtime_set_input(h.rt, "input", NPUC_DTYPE_FLOAT32, x.data(), x.size() * 4), NPUC_STATUS_OK) << npuc_last_error();
      EXPECT_EQ(npuc_runtime_run(h.rt, nullptr, nullptr), NPUC_STATUS_OK) << npuc_last_error();
      out.push_back(getOutput(h.rt, "logits", 1));
    }
    return out;
  };
  const auto first = frames();
  const auto second = frames();
  EXPECT_NE(first, second);  // the same frames after another history: other scales
  ASSERT_EQ(npuc_runtime_reset_state(h.rt), NPUC_STATUS_OK) << npuc_last_error();
  EXPECT_EQ(frames(), first);
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_runtime_reset_state(nullptr), "npuc_runtime_reset_state");
  fs::remove_all(root);
}

TEST(CApiPipeline, StagesGiveTheRuntimesFramesBitForBit) {
  // An int8-pow2 package (tidl) in two layers groups (the estimate's own cut): npuc_pipeline_run's outputs are
  // npuc_runtime_run's on the same frames in order — the range history travels with the frames.
  fs::path root = fs::path(NPUC_BINARY_DIR) / "test_packages" / ("capi_pipeline_" + std::to_string(::getpid()));
  fs::create_directories(root);
  TranslateOptions o;
  o.prefix = "pl";
  o.onnx = kSrc + "/models/digits/digits_cnn.onnx";
  o.target = "tidl";
  o.out_root = root;
  o.calibration["input"] = {readNpyFile(kSrc + "/models/digits/test_x.npy")};
  o.auto_layer_groups = true;
  TranslateResult r = translate(o);
  ASSERT_TRUE(r.ok);
  npuc_pipeline* p = nullptr;
  ASSERT_EQ(npuc_pipeline_open(r.dir.c_str(), 1, 0, &p), NPUC_STATUS_OK) << npuc_last_error();
  std::unique_ptr<npuc_pipeline, void (*)(npuc_pipeline*)> keep(p, npuc_pipeline_close);
  size_t stages = 0, ni = 0, no = 0;
  ASSERT_EQ(npuc_pipeline_num_stages(p, &stages), NPUC_STATUS_OK);
  ASSERT_EQ(stages, 2u);
  int group = 0;
  ASSERT_EQ(npuc_pipeline_stage_info(p, 1, &group, nullptr, nullptr), NPUC_STATUS_OK) << npuc_last_error();
  EXPECT_EQ(group, 2);
  ASSERT_EQ(npuc_pipeline_num_inputs(p, &ni), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_pipeline_num_outputs(p, &no), NPUC_STATUS_OK);
  ASSERT_EQ(ni, 1u);
  ASSERT_EQ(no, 1u);
  npuc_tensor_info in{}, out{};
  ASSERT_EQ(npuc_pipeline_input_info(p, 0, &in), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_pipeline_output_info(p, 0, &out), NPUC_STATUS_OK);
  EXPECT_STREQ(out.name, "logits");

  constexpr size_t kFrames = 6;
  std::vector<std::vector<float>> xs, ys(kFrames, std::vector<float>(out.elements));
  std::vector<const void*> ins;
  std::vector<float*> outs;
  for (size_t f = 0; f < kFrames; ++f) {
    xs.push_back(randomFloats(in.elements, 40 + static_cast<uint32_t>(f)));
    for (float& v : xs.back()) v *= 0.5f + static_cast<float>(f);  // ranges that move from frame to frame
  }
  for (size_t f = 0; f < kFrames; ++f) ins.push_back(xs[f].data()), outs.push_back(ys[f].data());
  double wall = -1;
  ASSERT_EQ(npuc_pipeline_run(p, kFrames, ins.data(), nullptr, outs.data(), &wall), NPUC_STATUS_OK) << npuc_last_error();
  EXPECT_GT(wall, 0.0);
  uint64_t handed = 0;
  double busy_ms = -1;
  ASSERT_EQ(npuc_pipeline_stage_info(p, 1, nullptr, &busy_ms, &handed), NPUC_STATUS_OK);
  EXPECT_GT(handed, 0u);
  EXPECT_GE(busy_ms, 0.0);

  Handle h;
  ASSERT_EQ(npuc_runtime_open(r.dir.c_str(), 1, 0, &h.rt), NPUC_STATUS_OK) << npuc_last_error();
  auto sequential = [&] {
    for (size_t f = 0; f < kFrames; ++f) {
      ASSERT_EQ(npuc_runtime_set_input(h.rt, in.name, NPUC_DTYPE_FLOAT32, xs[f].data(), xs[f].size() * 4), NPUC_STATUS_OK);
      ASSERT_EQ(npuc_runtime_run(h.rt, nullptr, nullptr), NPUC_STATUS_OK);
      const std::vector<uint8_t> want = getOutput(h.rt, out.name, 1);
      EXPECT_EQ(std::memcmp(want.data(), ys[f].data(), want.size()), 0) << "frame " << f;
    }
  };
  sequential();
  // Again from where both left off, then both reset: the same frames, the same bytes.
  const npuc_dtype f32[1] = {NPUC_DTYPE_FLOAT32};  // (the types named: the same frames)
  ASSERT_EQ(npuc_pipeline_run(p, kFrames, ins.data(), f32, outs.data(), nullptr), NPUC_STATUS_OK) << npuc_last_error();
  sequential();
  ASSERT_EQ(npuc_pipeline_reset_state(p), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_runtime_reset_state(h.rt), NPUC_STATUS_OK);
  ASSERT_EQ(npuc_pipeline_run(p, kFrames, ins.data(), nullptr, outs.data(), nullptr), NPUC_STATUS_OK) << npuc_last_error();
  sequential();

  // Bad calls: each an error naming the function, nothing run.
  npuc_pipeline* none = reinterpret_cast<npuc_pipeline*>(1);
  EXPECT_FAILS(NPUC_STATUS_IO, npuc_pipeline_open((root / "missing").c_str(), 1, 0, &none), "npuc_pipeline_open");
  EXPECT_EQ(none, nullptr);
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_open(r.dir.c_str(), 0, 0, &none), "threads");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_run(nullptr, 1, ins.data(), nullptr, outs.data(), nullptr), "p is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_run(p, 0, ins.data(), nullptr, outs.data(), nullptr), "frames is 0");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_run(p, 1, nullptr, nullptr, outs.data(), nullptr), "inputs is NULL");
  const void* no_input[1] = {nullptr};
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_run(p, 1, no_input, nullptr, outs.data(), nullptr), "input 'input') is NULL");
  float* no_output[1] = {nullptr};
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_run(p, 1, ins.data(), nullptr, no_output, nullptr), "output 'logits') is NULL");
  const npuc_dtype bad_type[1] = {static_cast<npuc_dtype>(99)};
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_run(p, 1, ins.data(), bad_type, outs.data(), nullptr), "not an npuc_dtype");
  const npuc_dtype int8_type[1] = {NPUC_DTYPE_INT8};  // (a float input takes float32 or float16: refused by the stage)
  EXPECT_NE(npuc_pipeline_run(p, 1, ins.data(), int8_type, outs.data(), nullptr), NPUC_STATUS_OK);
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_stage_info(p, 2, &group, nullptr, nullptr), "out of range");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_num_stages(p, nullptr), "count is NULL");
  EXPECT_FAILS(NPUC_STATUS_INVALID_ARGUMENT, npuc_pipeline_reset_state(nullptr), "npuc_pipeline_reset_state");
  npuc_pipeline_close(nullptr);
  keep.reset();
  fs::remove_all(root);
}
