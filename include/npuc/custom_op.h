/* npuc custom-operator plugins: the stable C ABI (docs/custom-ops.md).
 *
 * A plugin is a shared library that exports one function, npuc_custom_op_library_get(), returning a table of
 * operator descriptors. Everything npuc and a plugin exchange passes through the types below: plain C structs,
 * no npuc internals, no C++ types, so a plugin builds against this header alone and links nothing of npuc.
 *
 * For each op a descriptor gives: its name and ONNX domain, its tensor inputs and outputs with the element types
 * each accepts, its typed parameters (where npuc reads each one in the model: a node attribute or a constant input),
 * and callbacks:
 *   infer         (required) output element types and shapes from the inputs' and the parameters
 *   init/destroy  (optional) per-layer state, made once the shapes are known
 *   compute_ref   (required) the reference computation: the specification of the op's numerics
 *   compute_fast  (optional) a faster computation that must give the same bits as compute_ref; npuc checks it
 *
 * A callback returns NPUC_OP_OK, or another status after calling ctx->set_error(ctx, "what went wrong"). npuc
 * catches C++ exceptions that leave a callback and reports them as the op's error; outputs are written into
 * buffers of exactly the inferred size, and npuc checks the bytes around them (a write out of bounds is an error
 * naming the op, not silent corruption). On a layer's first call for each set of shapes, a compute runs twice on
 * the same inputs into outputs pre-filled with different bytes (the extra run with a state of its own from init):
 * results that differ (an element left unwritten) are an error naming the op and the output.
 *
 * Versioning: NPUC_CUSTOM_OP_ABI_VERSION changes whenever any struct below changes layout or meaning. npuc refuses
 * a library of another version, and a package records the version its custom layers were translated with.
 */
#ifndef NPUC_CUSTOM_OP_H
#define NPUC_CUSTOM_OP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPUC_CUSTOM_OP_ABI_VERSION 1u
/* The one symbol npuc looks up in a plugin. */
#define NPUC_CUSTOM_OP_ENTRY "npuc_custom_op_library_get"
#define NPUC_OP_MAX_RANK 8

#if defined(__GNUC__)
#define NPUC_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define NPUC_PLUGIN_EXPORT
#endif

/* Element types: ONNX TensorProto's codes. */
typedef enum npuc_elem_type {
  NPUC_ELEM_FLOAT32 = 1,
  NPUC_ELEM_UINT8 = 2,
  NPUC_ELEM_INT8 = 3,
  NPUC_ELEM_UINT16 = 4,
  NPUC_ELEM_INT16 = 5,
  NPUC_ELEM_INT32 = 6,
  NPUC_ELEM_INT64 = 7,
  NPUC_ELEM_BOOL = 9,
  NPUC_ELEM_FLOAT16 = 10
} npuc_elem_type;

/* Parameter types. The RKNN guide's VX types map onto them: VX_TYPE_BOOL -> BOOL; VX_TYPE_INT8 .. VX_TYPE_UINT64,
 * VX_TYPE_ENUM, VX_TYPE_SIZE, VX_TYPE_CHAR -> INT; VX_TYPE_FLOAT16/32/64 -> FLOAT; VX_TYPE_ARRAY -> INTS (the guide's
 * arrays hold int32 items); VX_TYPE_TENSOR -> TENSOR. STRING and FLOATS are npuc's additions. */
typedef enum npuc_param_type {
  NPUC_PARAM_BOOL = 1,
  NPUC_PARAM_INT = 2,
  NPUC_PARAM_FLOAT = 3,
  NPUC_PARAM_STRING = 4,
  NPUC_PARAM_INTS = 5,
  NPUC_PARAM_FLOATS = 6,
  NPUC_PARAM_TENSOR = 7
} npuc_param_type;

typedef enum npuc_op_status { NPUC_OP_OK = 0, NPUC_OP_ERROR = 1 } npuc_op_status;

/* A tensor as a callback sees it. Row-major (C order), dims[0] outermost; models are NCHW. In infer, data is set for
 * inputs that are constants of the model (initializers, folded values; in a package, tensors in its weights) and may
 * be set for others (the reference engine passes every input): an output shape may depend on constant inputs only.
 * In compute, inputs are read-only and outputs are to be written in full. */
typedef struct npuc_tensor {
  int32_t elem_type; /* npuc_elem_type */
  int32_t rank;      /* 0 .. NPUC_OP_MAX_RANK */
  int64_t dims[NPUC_OP_MAX_RANK];
  void* data;
  uint64_t bytes; /* element count * element size (0 in infer) */
} npuc_tensor;

/* A parameter's value for one node. present is 0 when the node does not give an optional parameter (the other
 * fields are then zero; a required one is always present). ctx->params, its strings, arrays and tensors stay valid
 * and unchanged for the life of the layer: init may keep pointers to them in its state. */
typedef struct npuc_param {
  const char* name;
  int32_t type; /* npuc_param_type */
  int32_t present;
  int64_t i;          /* BOOL (0/1), INT */
  double f;           /* FLOAT */
  const char* s;      /* STRING, NUL-terminated */
  uint64_t count;     /* INTS, FLOATS: items */
  const int64_t* ints;
  const double* floats;
  const npuc_tensor* tensor; /* TENSOR: a constant of the model (data set) */
} npuc_param;

/* Where npuc reads a parameter: input < 0 -> the node attribute of the parameter's name; input = k >= 0 -> the
 * node's input k, which must be a constant of the model (an initializer or a folded value). */
typedef struct npuc_param_def {
  const char* name;
  int32_t type; /* npuc_param_type */
  int32_t input;
  int32_t required; /* 1: a node without it is refused by name */
  const char* vx_type; /* the type the definition gave ("VX_TYPE_ARRAY", …): npuc refuses a value it cannot hold
                          (VX_TYPE_INT8 … UINT64, ENUM, SIZE, CHAR, FLOAT16, FLOAT32; docs/custom-ops.md) */
} npuc_param_def;

/* A tensor input or output: its name and the element types it accepts. A tensor whose type the port lists passes as
 * it is; a float32 or float16 tensor the port does not list passes as the port's float type (float32 when listed):
 * a float16 package's activations are widened exactly for a float32 port, and a float32 result is rounded to nearest
 * even when the package stores float16. infer, compute and init all see the converted types. */
typedef struct npuc_port_def {
  const char* name;
  uint32_t num_types;
  const int32_t* types; /* npuc_elem_type; num_types 0 means { NPUC_ELEM_FLOAT32 } */
} npuc_port_def;

typedef struct npuc_op_context npuc_op_context;
struct npuc_op_context {
  uint32_t struct_size; /* sizeof(npuc_op_context) of the npuc that made it */
  const char* node_name; /* the model's node */
  const npuc_param* params; /* in the descriptor's order */
  uint32_t num_params;
  void* state; /* what init returned (NULL without init); compute may change what it points at */
  int32_t num_threads; /* a hint: how many threads the caller runs with (results must not depend on it) */
  void* host; /* npuc's own; do not touch */
  /* Records the message of a failing callback (copied; the last call wins). */
  void (*set_error)(npuc_op_context* ctx, const char* message);
};

typedef int32_t (*npuc_infer_fn)(npuc_op_context* ctx, const npuc_tensor* inputs, uint32_t num_inputs,
                                 npuc_tensor* outputs, uint32_t num_outputs);
typedef int32_t (*npuc_init_fn)(npuc_op_context* ctx, const npuc_tensor* inputs, uint32_t num_inputs,
                                const npuc_tensor* outputs, uint32_t num_outputs, void** state);
typedef void (*npuc_destroy_fn)(void* state);
typedef int32_t (*npuc_compute_fn)(npuc_op_context* ctx, const npuc_tensor* inputs, uint32_t num_inputs,
                                   npuc_tensor* outputs, uint32_t num_outputs);

typedef struct npuc_custom_op {
  uint32_t struct_size; /* sizeof(npuc_custom_op) */
  const char* name;     /* the ONNX op_type */
  const char* domain;   /* the ONNX domain ("" = ai.onnx: only for names npuc does not implement) */
  const char* engine;   /* where a target runs it: "vector" (default when NULL), "mac", or a target's engine name */
  uint32_t num_inputs;
  const npuc_port_def* inputs;
  uint32_t num_outputs;
  const npuc_port_def* outputs;
  uint32_t num_params;
  const npuc_param_def* params;
  npuc_infer_fn infer;
  npuc_init_fn init;       /* optional; again when the shapes change (the previous state destroyed first) */
  npuc_destroy_fn destroy; /* required with init: called with what each successful init stored, even NULL */
  npuc_compute_fn compute_ref;
  npuc_compute_fn compute_fast; /* optional; same bits as compute_ref */
  const char* doc;              /* one line */
} npuc_custom_op;

typedef struct npuc_custom_op_library {
  uint32_t abi_version; /* NPUC_CUSTOM_OP_ABI_VERSION */
  uint32_t num_ops;
  const npuc_custom_op* ops;
} npuc_custom_op_library;

typedef const npuc_custom_op_library* (*npuc_custom_op_library_get_fn)(void);

/* Helpers for callbacks (header-only). */
static inline const npuc_param* npuc_param_find(const npuc_op_context* ctx, const char* name) {
  for (uint32_t k = 0; k < ctx->num_params; ++k) {
    const char *a = ctx->params[k].name, *b = name;
    while (*a && *a == *b) ++a, ++b;
    if (*a == *b) return &ctx->params[k];
  }
  return NULL;
}
static inline int64_t npuc_tensor_numel(const npuc_tensor* t) {
  int64_t n = 1;
  for (int32_t k = 0; k < t->rank; ++k) n *= t->dims[k];
  return n;
}

#ifdef __cplusplus
}
#endif

#endif /* NPUC_CUSTOM_OP_H */
