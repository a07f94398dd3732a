/* The RKNN guide's OpenVX kernel interface over npuc's custom-op ABI (docs/custom-ops.md, "Porting an RKNN kernel").
 *
 * An RKNN custom op's CPU kernel is `vx_status cpu_kernel_function(vx_node node, const vx_reference* parameters,
 * uint32_t paramNum)`: its inputs, outputs and parameters arrive as OpenVX objects, read and written with
 * vxQueryTensor / vxCopyTensorPatch, vxCopyScalar and vxQueryArray / vxMapArrayRange (the guide's §3.3). This header
 * gives those objects and functions, implemented here (header only: the plugin still links nothing of npuc), and a
 * macro that turns such a kernel into an npuc compute callback:
 *
 *     NPUC_VX_CPU_KERNEL(compute_ref, cpu_kernel_function, kParams)
 *
 * defines `compute_ref` (an npuc_compute_fn) that passes the kernel, in this order: the op's tensor inputs, its
 * outputs, then one object per parameter of kParams (its npuc_param_def array): a vx_scalar for BOOL / INT / FLOAT
 * (of the definition's vx_type — "VX_TYPE_INT8" … "VX_TYPE_FLOAT64" — or VX_TYPE_BOOL, VX_TYPE_INT32, VX_TYPE_FLOAT32
 * without one), a vx_array of VX_TYPE_INT32 items for INTS (the guide's arrays) or VX_TYPE_FLOAT32 for FLOATS, a
 * vx_tensor for TENSOR, NULL for STRING and for an optional parameter the node leaves out.
 *
 * OpenVX conventions kept: a tensor's dims are listed innermost first (an NCHW tensor is W, H, C, N) and a patch's
 * strides are in bytes per OpenVX dim; scalars copy in their own type's size. Element types are npuc's: a tensor is
 * float32 unless its port lists other types (float16 for the guide's unquantized ops: declare it on the port).
 * Not here: the OpenVX library itself (contexts, graphs, images, the vxu vision functions) and VX (PPU) kernels —
 * a kernel uses plain C for what it computes. Status values other than VX_SUCCESS (0) are negative, not OpenVX's.
 */
#ifndef NPUC_OPENVX_COMPAT_H
#define NPUC_OPENVX_COMPAT_H

#include <npuc/custom_op.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t vx_status;
typedef int32_t vx_enum;
typedef size_t vx_size;
typedef int32_t vx_bool;
typedef char vx_char;
typedef int8_t vx_int8;
typedef uint8_t vx_uint8;
typedef int16_t vx_int16;
typedef uint16_t vx_uint16;
typedef int32_t vx_int32;
typedef uint32_t vx_uint32;
typedef int64_t vx_int64;
typedef uint64_t vx_uint64;
typedef uint16_t vx_float16; /* IEEE binary16 bits */
typedef float vx_float32;
typedef double vx_float64;
typedef size_t vx_map_id;
#define VX_CALLBACK
#define vx_true_e 1
#define vx_false_e 0

enum {
  VX_SUCCESS = 0,
  VX_FAILURE = -1,
  VX_ERROR_NOT_SUPPORTED = -3,
  VX_ERROR_INVALID_PARAMETERS = -10,
  VX_ERROR_INVALID_REFERENCE = -12,
  VX_ERROR_INVALID_DIMENSION = -13,
  VX_ERROR_INVALID_TYPE = -15,
  VX_ERROR_NO_MEMORY = -8
};
enum {
  VX_TYPE_INVALID = 0x000, VX_TYPE_CHAR = 0x001, VX_TYPE_INT8 = 0x002, VX_TYPE_UINT8 = 0x003, VX_TYPE_INT16 = 0x004,
  VX_TYPE_UINT16 = 0x005, VX_TYPE_INT32 = 0x006, VX_TYPE_UINT32 = 0x007, VX_TYPE_INT64 = 0x008, VX_TYPE_UINT64 = 0x009,
  VX_TYPE_FLOAT32 = 0x00A, VX_TYPE_FLOAT64 = 0x00B, VX_TYPE_ENUM = 0x00C, VX_TYPE_SIZE = 0x00D, VX_TYPE_FLOAT16 = 0x00F,
  VX_TYPE_BOOL = 0x010, VX_TYPE_CONTEXT = 0x801, VX_TYPE_NODE = 0x803, VX_TYPE_SCALAR = 0x80D, VX_TYPE_ARRAY = 0x80E,
  VX_TYPE_TENSOR = 0x815
};
enum { VX_READ_ONLY = 0x11001, VX_WRITE_ONLY = 0x11002, VX_READ_AND_WRITE = 0x11003 };
enum { VX_MEMORY_TYPE_NONE = 0xE000, VX_MEMORY_TYPE_HOST = 0xE001 };
enum { VX_NOGAP_X = 1 };
enum {
  VX_TENSOR_NUMBER_OF_DIMS = 0x81500, VX_TENSOR_DIMS = 0x81501, VX_TENSOR_DATA_TYPE = 0x81502,
  VX_TENSOR_FIXED_POINT_POSITION = 0x81503, VX_SCALAR_TYPE = 0x80D00, VX_ARRAY_ITEMTYPE = 0x80E00,
  VX_ARRAY_NUMITEMS = 0x80E01, VX_ARRAY_CAPACITY = 0x80E02, VX_ARRAY_ITEMSIZE = 0x80E03
};

/* Every object: a tensor (an npuc tensor of the call), a scalar, an array, or the node / context stand-ins. */
typedef struct npuc_vx_object {
  vx_enum kind;
  npuc_tensor* tensor; /* VX_TYPE_TENSOR */
  int32_t writable;    /* an output tensor, an array the kernel made */
  vx_enum type;        /* a scalar's type, an array's item type */
  unsigned char value[8];
  unsigned char* items; /* VX_TYPE_ARRAY: capacity items of size item_size */
  vx_size item_size, count, capacity;
} npuc_vx_object;
typedef npuc_vx_object* vx_reference;
typedef npuc_vx_object* vx_tensor;
typedef npuc_vx_object* vx_scalar;
typedef npuc_vx_object* vx_array;
typedef npuc_vx_object* vx_node;
typedef npuc_vx_object* vx_context;

/* Bytes of one item of a vx_type_e (0: not a type a scalar or item holds). */
static inline vx_size npuc_vx_type_size(vx_enum t) {
  switch (t) {
    case VX_TYPE_CHAR: case VX_TYPE_INT8: case VX_TYPE_UINT8: return 1;
    case VX_TYPE_INT16: case VX_TYPE_UINT16: case VX_TYPE_FLOAT16: return 2;
    case VX_TYPE_INT32: case VX_TYPE_UINT32: case VX_TYPE_FLOAT32: case VX_TYPE_ENUM: case VX_TYPE_BOOL: return 4;
    case VX_TYPE_INT64: case VX_TYPE_UINT64: case VX_TYPE_FLOAT64: case VX_TYPE_SIZE: return 8;
    default: return 0;
  }
}

/* The vx_type_e of an npuc element type. */
static inline vx_enum npuc_vx_elem_type(int32_t e) {
  switch (e) {
    case NPUC_ELEM_FLOAT32: return VX_TYPE_FLOAT32;
    case NPUC_ELEM_FLOAT16: return VX_TYPE_FLOAT16;
    case NPUC_ELEM_UINT8: case NPUC_ELEM_BOOL: return VX_TYPE_UINT8;
    case NPUC_ELEM_INT8: return VX_TYPE_INT8;
    case NPUC_ELEM_UINT16: return VX_TYPE_UINT16;
    case NPUC_ELEM_INT16: return VX_TYPE_INT16;
    case NPUC_ELEM_INT32: return VX_TYPE_INT32;
    case NPUC_ELEM_INT64: return VX_TYPE_INT64;
    default: return VX_TYPE_INVALID;
  }
}

static inline vx_context vxGetContext(vx_reference ref) {
  static npuc_vx_object context = {VX_TYPE_CONTEXT, NULL, 0, 0, {0}, NULL, 0, 0, 0};
  (void)ref;
  return &context;
}
static inline vx_status vxGetStatus(vx_reference ref) { return ref ? VX_SUCCESS : VX_ERROR_INVALID_REFERENCE; }

/* ---- tensors (§3.3.1) ---- */
static inline vx_status vxQueryTensor(vx_tensor t, vx_enum attribute, void* ptr, vx_size size) {
  if (!t || t->kind != VX_TYPE_TENSOR || !ptr) return VX_ERROR_INVALID_REFERENCE;
  const int32_t r = t->tensor->rank;
  switch (attribute) {
    case VX_TENSOR_NUMBER_OF_DIMS:  /* a vx_size, or the guide's uint32_t */
      if (size == sizeof(vx_size)) *(vx_size*)ptr = (vx_size)r;
      else if (size == sizeof(uint32_t)) *(uint32_t*)ptr = (uint32_t)r;
      else return VX_ERROR_INVALID_PARAMETERS;
      return VX_SUCCESS;
    case VX_TENSOR_DIMS: /* innermost first; vx_size items, or the guide's uint32_t */
      for (int32_t d = 0; d < r; ++d) {
        const int64_t v = t->tensor->dims[r - 1 - d];
        if (size == (vx_size)r * sizeof(vx_size)) ((vx_size*)ptr)[d] = (vx_size)v;
        else if (size == (vx_size)r * sizeof(uint32_t)) ((uint32_t*)ptr)[d] = (uint32_t)v;
        else return VX_ERROR_INVALID_PARAMETERS;
      }
      return VX_SUCCESS;
    case VX_TENSOR_DATA_TYPE:
      if (size != sizeof(vx_enum)) return VX_ERROR_INVALID_PARAMETERS;
      *(vx_enum*)ptr = npuc_vx_elem_type(t->tensor->elem_type);
      return VX_SUCCESS;
    case VX_TENSOR_FIXED_POINT_POSITION:
      if (size != sizeof(vx_int8)) return VX_ERROR_INVALID_PARAMETERS;
      *(vx_int8*)ptr = 0;
      return VX_SUCCESS;
    default: return VX_ERROR_NOT_SUPPORTED;
  }
}

/* Copies the patch [view_start, view_end) of the tensor (OpenVX dims, innermost first) from / to user memory laid out
 * with user_stride (bytes per OpenVX dim). */
static inline vx_status vxCopyTensorPatch(vx_tensor t, vx_size num_dims, const vx_size* view_start, const vx_size* view_end,
                                          const vx_size* user_stride, void* user_ptr, vx_enum usage, vx_enum mem_type) {
  if (!t || t->kind != VX_TYPE_TENSOR) return VX_ERROR_INVALID_REFERENCE;
  const npuc_tensor* x = t->tensor;
  const vx_size es = npuc_vx_type_size(npuc_vx_elem_type(x->elem_type));
  if (num_dims != (vx_size)x->rank || num_dims > NPUC_OP_MAX_RANK || !view_start || !view_end || !user_stride || !user_ptr || !es ||
      mem_type != VX_MEMORY_TYPE_HOST)
    return VX_ERROR_INVALID_PARAMETERS;
  if (usage != VX_READ_ONLY && usage != VX_WRITE_ONLY) return VX_ERROR_INVALID_PARAMETERS;
  if (usage == VX_WRITE_ONLY && !t->writable) return VX_ERROR_INVALID_PARAMETERS; /* an input */
  vx_size dims[NPUC_OP_MAX_RANK], tstride[NPUC_OP_MAX_RANK], idx[NPUC_OP_MAX_RANK];
  for (vx_size d = 0; d < num_dims; ++d) {
    dims[d] = (vx_size)x->dims[num_dims - 1 - d];
    tstride[d] = d == 0 ? es : tstride[d - 1] * dims[d - 1];
    if (view_start[d] >= view_end[d] || view_end[d] > dims[d]) return VX_ERROR_INVALID_DIMENSION;
    idx[d] = view_start[d];
  }
  unsigned char* base = (unsigned char*)x->data;
  unsigned char* user = (unsigned char*)user_ptr;
  if (num_dims == 0) {
    if (usage == VX_READ_ONLY) memcpy(user, base, es);
    else memcpy(base, user, es);
    return VX_SUCCESS;
  }
  for (;;) {
    vx_size to = 0, uo = 0;
    for (vx_size d = 0; d < num_dims; ++d) to += idx[d] * tstride[d], uo += (idx[d] - view_start[d]) * user_stride[d];
    if (usage == VX_READ_ONLY) memcpy(user + uo, base + to, es);
    else memcpy(base + to, user + uo, es);
    vx_size d = 0;
    while (d < num_dims && ++idx[d] == view_end[d]) idx[d] = view_start[d], ++d;
    if (d == num_dims) return VX_SUCCESS;
  }
}

/* ---- scalars (§3.3.2 1) ---- */
static inline vx_scalar vxCreateScalar(vx_context context, vx_enum data_type, const void* ptr) {
  const vx_size n = npuc_vx_type_size(data_type);
  (void)context;
  if (!n) return NULL;
  npuc_vx_object* s = (npuc_vx_object*)calloc(1, sizeof(npuc_vx_object));
  if (!s) return NULL;
  s->kind = VX_TYPE_SCALAR;
  s->type = data_type;
  if (ptr) memcpy(s->value, ptr, n);
  return s;
}
static inline vx_scalar vxCreateScalarWithSize(vx_context context, vx_enum data_type, const void* ptr, vx_size size) {
  return size == npuc_vx_type_size(data_type) ? vxCreateScalar(context, data_type, ptr) : NULL;
}
static inline vx_status vxReleaseScalar(vx_scalar* s) {
  if (!s || !*s) return VX_ERROR_INVALID_REFERENCE;
  free(*s);
  *s = NULL;
  return VX_SUCCESS;
}
static inline vx_status vxQueryScalar(vx_scalar s, vx_enum attribute, void* ptr, vx_size size) {
  if (!s || s->kind != VX_TYPE_SCALAR || !ptr) return VX_ERROR_INVALID_REFERENCE;
  if (attribute != VX_SCALAR_TYPE) return VX_ERROR_NOT_SUPPORTED;
  if (size != sizeof(vx_enum)) return VX_ERROR_INVALID_PARAMETERS;
  *(vx_enum*)ptr = s->type;
  return VX_SUCCESS;
}
static inline vx_status vxCopyScalarWithSize(vx_scalar s, vx_size size, void* user_ptr, vx_enum usage, vx_enum mem_type) {
  if (!s || s->kind != VX_TYPE_SCALAR) return VX_ERROR_INVALID_REFERENCE;
  if (!user_ptr || size != npuc_vx_type_size(s->type) || mem_type != VX_MEMORY_TYPE_HOST) return VX_ERROR_INVALID_PARAMETERS;
  if (usage == VX_READ_ONLY) memcpy(user_ptr, s->value, size);
  else if (usage == VX_WRITE_ONLY) memcpy(s->value, user_ptr, size);
  else return VX_ERROR_INVALID_PARAMETERS;
  return VX_SUCCESS;
}
static inline vx_status vxCopyScalar(vx_scalar s, void* user_ptr, vx_enum usage, vx_enum mem_type) {
  if (!s || s->kind != VX_TYPE_SCALAR) return VX_ERROR_INVALID_REFERENCE;
  return vxCopyScalarWithSize(s, npuc_vx_type_size(s->type), user_ptr, usage, mem_type);
}

/* ---- arrays (§3.3.2 2) ---- */
static inline vx_array vxCreateArray(vx_context context, vx_enum item_type, vx_size capacity) {
  const vx_size n = npuc_vx_type_size(item_type);
  (void)context;
  if (!n || capacity > ((vx_size)1 << 32)) return NULL;
  npuc_vx_object* a = (npuc_vx_object*)calloc(1, sizeof(npuc_vx_object));
  if (!a) return NULL;
  a->kind = VX_TYPE_ARRAY;
  a->writable = 1;
  a->type = item_type;
  a->item_size = n;
  a->capacity = capacity;
  a->items = (unsigned char*)calloc(capacity ? capacity : 1, n);
  if (!a->items) {
    free(a);
    return NULL;
  }
  return a;
}
static inline vx_status vxReleaseArray(vx_array* a) {
  if (!a || !*a) return VX_ERROR_INVALID_REFERENCE;
  free((*a)->items);
  free(*a);
  *a = NULL;
  return VX_SUCCESS;
}
static inline vx_status vxAddArrayItems(vx_array a, vx_size count, const void* ptr, vx_size stride) {
  if (!a || a->kind != VX_TYPE_ARRAY) return VX_ERROR_INVALID_REFERENCE;
  if (!ptr || count > a->capacity - a->count) return VX_ERROR_INVALID_PARAMETERS;
  for (vx_size k = 0; k < count; ++k) memcpy(a->items + (a->count + k) * a->item_size, (const unsigned char*)ptr + k * stride, a->item_size);
  a->count += count;
  return VX_SUCCESS;
}
static inline vx_status vxQueryArray(vx_array a, vx_enum attribute, void* ptr, vx_size size) {
  if (!a || a->kind != VX_TYPE_ARRAY || !ptr) return VX_ERROR_INVALID_REFERENCE;
  if (attribute == VX_ARRAY_ITEMTYPE) {
    if (size != sizeof(vx_enum)) return VX_ERROR_INVALID_PARAMETERS;
    *(vx_enum*)ptr = a->type;
    return VX_SUCCESS;
  }
  vx_size v;
  switch (attribute) {
    case VX_ARRAY_NUMITEMS: v = a->count; break;
    case VX_ARRAY_CAPACITY: v = a->capacity; break;
    case VX_ARRAY_ITEMSIZE: v = a->item_size; break;
    default: return VX_ERROR_NOT_SUPPORTED;
  }
  if (size != sizeof(vx_size)) return VX_ERROR_INVALID_PARAMETERS;
  *(vx_size*)ptr = v;
  return VX_SUCCESS;
}
/* Items [range_start, range_end) in place: *ptr the first, *stride the item size. Items of a parameter are read-only
 * (VX_READ_ONLY); an array the kernel made may be written. */
static inline vx_status vxMapArrayRange(vx_array a, vx_size range_start, vx_size range_end, vx_map_id* map_id, vx_size* stride,
                                        void** ptr, vx_enum usage, vx_enum mem_type, vx_uint32 flags) {
  (void)flags;
  if (!a || a->kind != VX_TYPE_ARRAY) return VX_ERROR_INVALID_REFERENCE;
  if (!map_id || !stride || !ptr || range_start >= range_end || range_end > a->count || mem_type != VX_MEMORY_TYPE_HOST)
    return VX_ERROR_INVALID_PARAMETERS;
  if (usage != VX_READ_ONLY && !a->writable) return VX_ERROR_INVALID_PARAMETERS;
  *map_id = range_start;
  *stride = a->item_size;
  *ptr = a->items + range_start * a->item_size;
  return VX_SUCCESS;
}
static inline vx_status vxUnmapArrayRange(vx_array a, vx_map_id map_id) {
  (void)map_id;
  return a && a->kind == VX_TYPE_ARRAY ? VX_SUCCESS : VX_ERROR_INVALID_REFERENCE;
}

/* ---- the kernel as an npuc compute callback ---- */
typedef vx_status (*npuc_vx_kernel_fn)(vx_node node, const vx_reference* parameters, uint32_t num);

/* A parameter's scalar type: its definition's vx_type, or the default of its npuc type. */
static inline vx_enum npuc_vx_scalar_type(const npuc_param_def* def, int32_t type) {
  static const struct {
    const char* name;
    vx_enum type;
  } kTypes[] = {{"VX_TYPE_CHAR", VX_TYPE_CHAR},       {"VX_TYPE_INT8", VX_TYPE_INT8},       {"VX_TYPE_UINT8", VX_TYPE_UINT8},
                {"VX_TYPE_INT16", VX_TYPE_INT16},     {"VX_TYPE_UINT16", VX_TYPE_UINT16},   {"VX_TYPE_INT32", VX_TYPE_INT32},
                {"VX_TYPE_UINT32", VX_TYPE_UINT32},   {"VX_TYPE_INT64", VX_TYPE_INT64},     {"VX_TYPE_UINT64", VX_TYPE_UINT64},
                {"VX_TYPE_ENUM", VX_TYPE_ENUM},       {"VX_TYPE_SIZE", VX_TYPE_SIZE},       {"VX_TYPE_BOOL", VX_TYPE_BOOL},
                {"VX_TYPE_FLOAT16", VX_TYPE_FLOAT16}, {"VX_TYPE_FLOAT32", VX_TYPE_FLOAT32}, {"VX_TYPE_FLOAT64", VX_TYPE_FLOAT64}};
  if (def && def->vx_type)
    for (size_t k = 0; k < sizeof kTypes / sizeof kTypes[0]; ++k)
      if (!strcmp(def->vx_type, kTypes[k].name)) return kTypes[k].type;
  return type == NPUC_PARAM_BOOL ? VX_TYPE_BOOL : type == NPUC_PARAM_FLOAT ? VX_TYPE_FLOAT32 : VX_TYPE_INT32;
}

/* float32 -> IEEE binary16 bits, round to nearest even (a FLOAT parameter declared VX_TYPE_FLOAT16). */
static inline uint16_t npuc_vx_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return (uint16_t)(sign | 0x7C00u | (a > 0x7F800000u ? 0x200u : 0u));
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);
  if (a < 0x38800000u) { /* subnormal or zero */
    const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    const int shift = 113 - (int)(a >> 23);
    if (shift > 24) return (uint16_t)sign;
    const uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    return (uint16_t)(sign | (h + (rem > halfway || (rem == halfway && (h & 1)))));
  }
  const uint32_t h = ((a - 0x38000000u) >> 13), rem = a & 0x1FFFu;
  return (uint16_t)(sign | (h + (rem > 0x1000u || (rem == 0x1000u && (h & 1)))));
}

/* The object of parameter p (see the header comment); NULL for STRING or absent. Returns 0 when out of memory. */
static inline int npuc_vx_param_object(const npuc_param* p, const npuc_param_def* def, npuc_vx_object* o) {
  memset(o, 0, sizeof *o);
  if (!p->present || p->type == NPUC_PARAM_STRING) return 1;
  if (p->type == NPUC_PARAM_TENSOR) {
    o->kind = VX_TYPE_TENSOR;
    o->tensor = (npuc_tensor*)p->tensor;
    return 1;
  }
  if (p->type == NPUC_PARAM_INTS || p->type == NPUC_PARAM_FLOATS) {
    o->kind = VX_TYPE_ARRAY;
    o->type = p->type == NPUC_PARAM_INTS ? VX_TYPE_INT32 : VX_TYPE_FLOAT32;
    o->item_size = 4;
    o->count = o->capacity = (vx_size)p->count;
    o->items = (unsigned char*)calloc(p->count ? p->count : 1, 4);
    if (!o->items) return 0;
    for (uint64_t k = 0; k < p->count; ++k) {
      if (p->type == NPUC_PARAM_INTS) {
        const int32_t v = (int32_t)p->ints[k];
        memcpy(o->items + 4 * k, &v, 4);
      } else {
        const float v = (float)p->floats[k];
        memcpy(o->items + 4 * k, &v, 4);
      }
    }
    return 1;
  }
  o->kind = VX_TYPE_SCALAR;
  o->type = npuc_vx_scalar_type(def, p->type);
  union {
    int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32; int64_t i64; uint64_t u64; float f32; double f64;
  } v;
  memset(&v, 0, sizeof v);
  const double f = p->type == NPUC_PARAM_FLOAT ? p->f : (double)p->i;
  switch (o->type) {
    case VX_TYPE_CHAR: case VX_TYPE_INT8: v.i8 = (int8_t)p->i; break;
    case VX_TYPE_UINT8: v.u8 = (uint8_t)p->i; break;
    case VX_TYPE_INT16: v.i16 = (int16_t)p->i; break;
    case VX_TYPE_UINT16: v.u16 = (uint16_t)p->i; break;
    case VX_TYPE_INT32: case VX_TYPE_ENUM: case VX_TYPE_BOOL: v.i32 = (int32_t)p->i; break;
    case VX_TYPE_UINT32: v.u32 = (uint32_t)p->i; break;
    case VX_TYPE_INT64: case VX_TYPE_SIZE: v.i64 = p->i; break;
    case VX_TYPE_UINT64: v.u64 = (uint64_t)p->i; break;
    case VX_TYPE_FLOAT16: v.u16 = npuc_vx_half((float)f); break;
    case VX_TYPE_FLOAT32: v.f32 = (float)f; break;
    default: v.f64 = f; break;
  }
  memcpy(o->value, &v, npuc_vx_type_size(o->type));
  return 1;
}

/* Calls an RKNN-style kernel with the objects of one npuc compute call. */
static inline int32_t npuc_vx_call(npuc_op_context* ctx, const npuc_tensor* inputs, uint32_t num_inputs, npuc_tensor* outputs,
                                   uint32_t num_outputs, npuc_vx_kernel_fn kernel, const npuc_param_def* defs) {
  const uint32_t n = num_inputs + num_outputs + ctx->num_params;
  npuc_vx_object* objs = (npuc_vx_object*)calloc(n + 1, sizeof(npuc_vx_object));
  vx_reference* refs = (vx_reference*)calloc(n + 1, sizeof(vx_reference));
  int32_t status = NPUC_OP_OK;
  if (!objs || !refs) {
    ctx->set_error(ctx, "out of memory for the OpenVX objects");
    status = NPUC_OP_ERROR;
  } else {
    int ok = 1;
    for (uint32_t k = 0; k < num_inputs + num_outputs; ++k) {
      objs[k].kind = VX_TYPE_TENSOR;
      objs[k].tensor = k < num_inputs ? (npuc_tensor*)&inputs[k] : &outputs[k - num_inputs];
      objs[k].writable = k >= num_inputs;
      refs[k] = &objs[k];
    }
    for (uint32_t k = 0; k < ctx->num_params && ok; ++k) {
      npuc_vx_object* o = &objs[num_inputs + num_outputs + k];
      ok = npuc_vx_param_object(&ctx->params[k], defs ? &defs[k] : NULL, o);
      refs[num_inputs + num_outputs + k] = o->kind ? o : NULL;
    }
    npuc_vx_object node;
    memset(&node, 0, sizeof node);
    node.kind = VX_TYPE_NODE;
    const vx_status s = ok ? kernel(&node, refs, n) : VX_ERROR_NO_MEMORY;
    if (s != VX_SUCCESS) {
      char msg[96];
      snprintf(msg, sizeof msg, "the OpenVX kernel returned status %d", (int)s);
      ctx->set_error(ctx, msg);
      status = NPUC_OP_ERROR;
    }
  }
  if (objs)
    for (uint32_t k = 0; k < n; ++k) free(objs[k].items);
  free(objs);
  free(refs);
  return status;
}

/* Defines `name`, an npuc_compute_fn running `kernel` (an RKNN cpu_kernel_function); `defs` is the op's
 * npuc_param_def array (or NULL: the parameters' default OpenVX types). */
#define NPUC_VX_CPU_KERNEL(name, kernel, defs)                                                                           \
  static int32_t name(npuc_op_context* ctx, const npuc_tensor* inputs, uint32_t num_inputs, npuc_tensor* outputs,        \
                      uint32_t num_outputs) {                                                                            \
    return npuc_vx_call(ctx, inputs, num_inputs, outputs, num_outputs, kernel, defs);                                    \
  }

#ifdef __cplusplus
}
#endif

#endif /* NPUC_OPENVX_COMPAT_H */
