/* A custom-op plugin written as the RKNN guide writes a CPU kernel (§3.3), in C, through npuc/openvx_compat.h: the
 * op test.vx.VxScaleShift, y[n, c, h, w] = x[n, c, h, w] * scale + shift[c] + offset, with scale a VX_TYPE_FLOAT32
 * scalar, shift a VX_TYPE_ARRAY of int32 items and offset a VX_TYPE_INT16 scalar. The kernel reads the input whole
 * and writes the output one channel patch at a time (vxCopyTensorPatch with OpenVX's innermost-first dims and byte
 * strides), reads the scalars with vxQueryScalar / vxCopyScalar and the array with vxQueryArray / vxMapArrayRange.
 * With VX_PLUGIN_BAD_VIEW (domain test.vxbad) it asks for a patch one column past the tensor (the test expects the
 * failing status). */
#include <npuc/openvx_compat.h>

#include <stdlib.h>

#if defined(VX_PLUGIN_BAD_VIEW)
#define VX_DOMAIN "test.vxbad"
#else
#define VX_DOMAIN "test.vx"
#endif

static vx_status VX_CALLBACK vxScaleShiftKernel(vx_node node, const vx_reference* parameters, uint32_t paramNum) {
  vx_status status;
  uint32_t dim_num = 0, dims[4] = {0};
  vx_tensor input = (vx_tensor)parameters[0], output = (vx_tensor)parameters[1];
  vx_scalar scale_s = (vx_scalar)parameters[2], offset_s = (vx_scalar)parameters[4];
  vx_array shift_a = (vx_array)parameters[3];
  vx_enum type = 0, item_type = 0;
  vx_size items = 0, stride = 0, view_start[4] = {0}, view_end[4], user_stride[4];
  vx_map_id map_id;
  vx_float32 scale = 0;
  vx_int16 offset = 0;
  int32_t* shift = NULL;
  (void)node;
  if (paramNum != 5) return VX_ERROR_INVALID_PARAMETERS;
  status = vxQueryTensor(input, VX_TENSOR_NUMBER_OF_DIMS, &dim_num, sizeof(uint32_t));
  if (status != VX_SUCCESS || dim_num != 4) return VX_ERROR_INVALID_DIMENSION;
  status = vxQueryTensor(input, VX_TENSOR_DIMS, dims, sizeof(uint32_t) * dim_num);
  if (status != VX_SUCCESS) return status;
  status = vxQueryTensor(input, VX_TENSOR_DATA_TYPE, &type, sizeof(type));
  if (status != VX_SUCCESS || type != VX_TYPE_FLOAT32) return VX_ERROR_INVALID_TYPE;
  if (vxQueryScalar(scale_s, VX_SCALAR_TYPE, &type, sizeof(type)) != VX_SUCCESS || type != VX_TYPE_FLOAT32) return VX_ERROR_INVALID_TYPE;
  if (vxCopyScalar(scale_s, &scale, VX_READ_ONLY, VX_MEMORY_TYPE_HOST) != VX_SUCCESS) return VX_FAILURE;
  if (vxCopyScalarWithSize(offset_s, sizeof(offset), &offset, VX_READ_ONLY, VX_MEMORY_TYPE_HOST) != VX_SUCCESS) return VX_FAILURE;
  if (vxQueryArray(shift_a, VX_ARRAY_ITEMTYPE, &item_type, sizeof(item_type)) != VX_SUCCESS || item_type != VX_TYPE_INT32)
    return VX_ERROR_INVALID_TYPE;
  if (vxQueryArray(shift_a, VX_ARRAY_NUMITEMS, &items, sizeof(items)) != VX_SUCCESS || items != dims[2]) return VX_ERROR_INVALID_PARAMETERS;
  if (vxMapArrayRange(shift_a, 0, items, &map_id, &stride, (void**)&shift, VX_READ_ONLY, VX_MEMORY_TYPE_HOST, VX_NOGAP_X) != VX_SUCCESS)
    return VX_FAILURE;
  /* OpenVX dims: dims[0] = W, dims[1] = H, dims[2] = C, dims[3] = N. */
  const vx_size W = dims[0], H = dims[1], C = dims[2], N = dims[3];
  float* buf = (float*)malloc(W * H * C * N * sizeof(float));
  if (!buf) return VX_ERROR_NO_MEMORY;
  user_stride[0] = sizeof(float);
  for (int d = 1; d < 4; ++d) user_stride[d] = dims[d - 1] * user_stride[d - 1];
  for (int d = 0; d < 4; ++d) view_end[d] = dims[d];
  status = vxCopyTensorPatch(input, dim_num, view_start, view_end, user_stride, buf, VX_READ_ONLY, VX_MEMORY_TYPE_HOST);
  for (vx_size c = 0; c < C && status == VX_SUCCESS; ++c) {
    /* channel c of every image: a patch [0, W) x [0, H) x [c, c+1) x [0, N), from buf in the same strides */
    vx_size start[4] = {0, 0, c, 0}, end[4] = {W, H, c + 1, N};
    float* patch = (float*)malloc(W * H * N * sizeof(float));
    vx_size ps[4] = {sizeof(float), W * sizeof(float), W * H * sizeof(float), W * H * sizeof(float)};
#if defined(VX_PLUGIN_BAD_VIEW)
    end[0] = W + 1;
#endif
    if (!patch) {
      status = VX_ERROR_NO_MEMORY;
      break;
    }
    for (vx_size n = 0; n < N; ++n)
      for (vx_size i = 0; i < W * H; ++i)
        patch[n * W * H + i] = buf[(n * C + c) * W * H + i] * scale + (float)shift[c] + (float)offset;
    status = vxCopyTensorPatch(output, dim_num, start, end, ps, patch, VX_WRITE_ONLY, VX_MEMORY_TYPE_HOST);
    free(patch);
  }
  /* An input may not be written. */
  if (status == VX_SUCCESS &&
      vxCopyTensorPatch(input, dim_num, view_start, view_end, user_stride, buf, VX_WRITE_ONLY, VX_MEMORY_TYPE_HOST) == VX_SUCCESS)
    status = VX_FAILURE;
  free(buf);
  vxUnmapArrayRange(shift_a, map_id);
  return status;
}

static const npuc_port_def kIn[] = {{"x", 0, NULL}};
static const npuc_port_def kOut[] = {{"y", 0, NULL}};
static const npuc_param_def kParams[] = {{"scale", NPUC_PARAM_FLOAT, -1, 1, "VX_TYPE_FLOAT32"},
                                         {"shift", NPUC_PARAM_INTS, -1, 1, "VX_TYPE_ARRAY"},
                                         {"offset", NPUC_PARAM_INT, -1, 1, "VX_TYPE_INT16"}};

NPUC_VX_CPU_KERNEL(computeRef, vxScaleShiftKernel, kParams)

static int32_t infer(npuc_op_context* ctx, const npuc_tensor* in, uint32_t num_in, npuc_tensor* out, uint32_t num_out) {
  (void)num_in, (void)num_out;
  if (in[0].rank != 4) {
    ctx->set_error(ctx, "VxScaleShift takes [N, C, H, W]");
    return NPUC_OP_ERROR;
  }
  out[0] = in[0];
  out[0].data = NULL;
  return NPUC_OP_OK;
}

NPUC_PLUGIN_EXPORT const npuc_custom_op_library* npuc_custom_op_library_get(void) {
  static const npuc_custom_op ops[] = {{sizeof(npuc_custom_op), "VxScaleShift", VX_DOMAIN, NULL, 1, kIn, 1, kOut, 3, kParams, infer,
                                        NULL, NULL, computeRef, NULL, "y = x * scale + shift[c] + offset, an RKNN-style kernel"}};
  static const npuc_custom_op_library lib = {NPUC_CUSTOM_OP_ABI_VERSION, 1, ops};
  return &lib;
}
