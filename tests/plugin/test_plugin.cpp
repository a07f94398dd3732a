// A custom-op plugin for the tests, compiled once per fault (tests/CMakeLists.txt defines one FAULT_* macro): the op
// <domain>.ScaleBias, y[n, c, …] = x * scale + bias[c], with scale a float attribute and bias a tensor parameter
// read from the node's constant input 1. FAULT_GOOD is correct; most other builds break one rule of the ABI
// (STATEFUL, RANGES, TWOOUT and MULTIOUT are correct variants).
#include <npuc/custom_op.h>

#include <stdexcept>

#if defined(FAULT_GOOD)
#define DOMAIN "test.good"
#elif defined(FAULT_SHAPE)
#define DOMAIN "test.shape"
#elif defined(FAULT_THROWS)
#define DOMAIN "test.throws"
#elif defined(FAULT_OOB)
#define DOMAIN "test.oob"
#elif defined(FAULT_ABI)
#define DOMAIN "test.abi"
#elif defined(FAULT_NOCALLBACK)
#define DOMAIN "test.nocallback"
#elif defined(FAULT_FASTDIFFERS)
#define DOMAIN "test.fastdiffers"
#elif defined(FAULT_NOENTRY)
#define DOMAIN "test.noentry"
#elif defined(FAULT_INFERFAILS)
#define DOMAIN "test.inferfails"
#elif defined(FAULT_BUILTIN)
#define DOMAIN ""
#elif defined(FAULT_TWOOUT)
#define DOMAIN "test.twoout"  // correct, with a second output (x itself) that models may leave unused
#elif defined(FAULT_HALF)
#define DOMAIN "test.half"  // both computes write only the first half of y
#elif defined(FAULT_FASTHALF)
#define DOMAIN "test.fasthalf"  // compute_fast writes only the first half of y
#elif defined(FAULT_STATEFUL)
#define DOMAIN "test.stateful"  // correct, with state: y = x * scale + bias[c] + (the layer's calls before this one)
#elif defined(FAULT_RANGES)
#define DOMAIN "test.ranges"  // correct, with optional parameters of declared widths (not used by the computation)
#elif defined(FAULT_MULTIOUT)
// correct, with three outputs: y, sq = y * y, and csum [N, C] = the sums of x over each channel's plane; its int
// parameter `leave` (default 0) leaves the last `leave` elements of csum unwritten (a fault the first call shows)
#define DOMAIN "test.multiout"
#elif defined(FAULT_CRASHLOAD)
#define DOMAIN "test.crashload"  // its initialisation dies of SIGBUS while dlopen runs it (as a truncated library does)
#endif

#if defined(FAULT_CRASHLOAD)
#include <signal.h>
__attribute__((constructor)) static void crashWhileLoading() { ::raise(SIGBUS); }
#endif

namespace {

const npuc_port_def kIn[] = {{"x", 0, nullptr}};
#if defined(FAULT_TWOOUT)
const npuc_port_def kOut[] = {{"y", 0, nullptr}, {"x_copy", 0, nullptr}};
#elif defined(FAULT_MULTIOUT)
const npuc_port_def kOut[] = {{"y", 0, nullptr}, {"sq", 0, nullptr}, {"csum", 0, nullptr}};
#else
const npuc_port_def kOut[] = {{"y", 0, nullptr}};
#endif
#if defined(FAULT_RANGES)
const npuc_param_def kParams[] = {{"scale", NPUC_PARAM_FLOAT, -1, 1, "VX_TYPE_FLOAT32"},
                                  {"bias", NPUC_PARAM_TENSOR, 1, 1, "VX_TYPE_TENSOR"},
                                  {"i8", NPUC_PARAM_INT, -1, 0, "VX_TYPE_INT8"},
                                  {"u8", NPUC_PARAM_INT, -1, 0, "VX_TYPE_UINT8"},
                                  {"u16s", NPUC_PARAM_INTS, -1, 0, "VX_TYPE_UINT16"},
                                  {"h", NPUC_PARAM_FLOAT, -1, 0, "VX_TYPE_FLOAT16"},
                                  {"k", NPUC_PARAM_INT, 2, 0, "VX_TYPE_INT8"}};
#elif defined(FAULT_MULTIOUT)
const npuc_param_def kParams[] = {{"scale", NPUC_PARAM_FLOAT, -1, 1, "VX_TYPE_FLOAT32"},
                                  {"bias", NPUC_PARAM_TENSOR, 1, 1, "VX_TYPE_TENSOR"},
                                  {"leave", NPUC_PARAM_INT, -1, 0, "VX_TYPE_INT32"}};
#else
const npuc_param_def kParams[] = {{"scale", NPUC_PARAM_FLOAT, -1, 1, "VX_TYPE_FLOAT32"},
                                  {"bias", NPUC_PARAM_TENSOR, 1, 1, "VX_TYPE_TENSOR"}};
#endif

#if defined(FAULT_STATEFUL)
struct State {
  int64_t calls = 0;
};
int32_t init(npuc_op_context*, const npuc_tensor*, uint32_t, const npuc_tensor*, uint32_t, void** state) {
  *state = new State;
  return NPUC_OP_OK;
}
void destroy(void* state) { delete static_cast<State*>(state); }
#endif

int32_t infer(npuc_op_context* ctx, const npuc_tensor* in, uint32_t, npuc_tensor* out, uint32_t) {
#if defined(FAULT_INFERFAILS)
  ctx->set_error(ctx, "the size is not one this op supports");
  return NPUC_OP_ERROR;
#endif
  const npuc_param* bias = npuc_param_find(ctx, "bias");
  if (in[0].rank < 2 || !bias || !bias->present || npuc_tensor_numel(bias->tensor) != in[0].dims[1]) {
    ctx->set_error(ctx, "ScaleBias takes [N, C, ...] and a bias of C values");
    return NPUC_OP_ERROR;
  }
  out[0] = in[0];
  out[0].data = nullptr;
#if defined(FAULT_TWOOUT)
  out[1] = out[0];
#endif
#if defined(FAULT_MULTIOUT)
  out[1] = out[0];
  out[2] = out[0];
  out[2].rank = 2;
#endif
#if defined(FAULT_SHAPE)
  out[0].rank = 9;
#endif
  return NPUC_OP_OK;
}

int32_t compute(npuc_op_context* ctx, const npuc_tensor* in, npuc_tensor* out, bool fast) {
  const npuc_param* scale = npuc_param_find(ctx, "scale");
  const npuc_param* bias = npuc_param_find(ctx, "bias");
  const float s = static_cast<float>(scale->f);
  const float* b = static_cast<const float*>(bias->tensor->data);
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  const int64_t n = npuc_tensor_numel(&in[0]), c = in[0].dims[1], inner = n / (in[0].dims[0] * c);
#if defined(FAULT_HALF)
  const int64_t written = n / 2;
#elif defined(FAULT_FASTHALF)
  const int64_t written = fast ? n / 2 : n;
#else
  const int64_t written = n;
#endif
#if defined(FAULT_STATEFUL)
  const float calls = static_cast<float>(static_cast<State*>(ctx->state)->calls++);
  for (int64_t i = 0; i < written; ++i) y[i] = x[i] * s + b[(i / inner) % c] + calls;
#else
  for (int64_t i = 0; i < written; ++i) y[i] = x[i] * s + b[(i / inner) % c];
#endif
#if defined(FAULT_TWOOUT)
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(out[1].data)[i] = x[i];
#endif
#if defined(FAULT_MULTIOUT)
  float* sq = static_cast<float*>(out[1].data);
  for (int64_t i = 0; i < n; ++i) sq[i] = y[i] * y[i];
  const npuc_param* leave = npuc_param_find(ctx, "leave");
  const int64_t planes = in[0].dims[0] * c, left = leave && leave->present ? leave->i : 0;
  float* cs = static_cast<float*>(out[2].data);
  for (int64_t p = 0; p < planes - left; ++p) {
    float acc = 0;
    for (int64_t j = 0; j < inner; ++j) acc += x[p * inner + j];
    cs[p] = acc;
  }
#endif
#if defined(FAULT_THROWS)
  throw std::runtime_error("the op's kernel gave up");
#endif
#if defined(FAULT_OOB)
  y[n] = 0;  // one element past the end
#endif
#if defined(FAULT_FASTDIFFERS)
  if (fast && n > 3) y[3] += 1;
#endif
  (void)fast;
  return NPUC_OP_OK;
}
[[maybe_unused]] int32_t computeRef(npuc_op_context* ctx, const npuc_tensor* in, uint32_t, npuc_tensor* out, uint32_t) {
  return compute(ctx, in, out, false);
}
int32_t computeFast(npuc_op_context* ctx, const npuc_tensor* in, uint32_t, npuc_tensor* out, uint32_t) {
  return compute(ctx, in, out, true);
}

}  // namespace

#if defined(FAULT_NOENTRY)
extern "C" NPUC_PLUGIN_EXPORT const npuc_custom_op_library* npuc_custom_ops(void) {
#else
extern "C" NPUC_PLUGIN_EXPORT const npuc_custom_op_library* npuc_custom_op_library_get(void) {
#endif
  static const npuc_custom_op ops[] = {{
      sizeof(npuc_custom_op),
#if defined(FAULT_BUILTIN)
      "Relu",
#else
      "ScaleBias",
#endif
      DOMAIN, "vector", 1, kIn, sizeof kOut / sizeof kOut[0], kOut, sizeof kParams / sizeof kParams[0], kParams, infer,
#if defined(FAULT_STATEFUL)
      init, destroy,
#else
      nullptr, nullptr,
#endif
#if defined(FAULT_NOCALLBACK)
      nullptr,
#else
      computeRef,
#endif
      computeFast, "x * scale + bias[c]"}};
#if defined(FAULT_ABI)
  static const npuc_custom_op_library lib = {99, 1, ops};
#else
  static const npuc_custom_op_library lib = {NPUC_CUSTOM_OP_ABI_VERSION, 1, ops};
#endif
  return &lib;
}
