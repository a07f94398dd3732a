/* Compiled as C99 with -pedantic-errors (tests/CMakeLists.txt): npuc.h is a pure C header, and the C API is
 * callable from C. capi_test.cpp calls this function. */
#include "npuc/npuc.h"

#include <stdlib.h>

/* Opens a package, fills every input with `fill` (as float32), runs, and returns the first float32 value of the
 * first output in *first. Returns the first failing status. */
npuc_status c_run_filled(const char* dir, float fill, float* first) {
  npuc_runtime* rt = NULL;
  npuc_status s = npuc_runtime_open(dir, 1, 0, &rt);
  size_t n = 0, i, k, written = 0;
  if (s != NPUC_STATUS_OK) return s;
  s = npuc_runtime_num_inputs(rt, &n);
  for (i = 0; s == NPUC_STATUS_OK && i < n; ++i) {
    npuc_tensor_info info;
    float* data;
    s = npuc_runtime_input_info(rt, i, &info);
    if (s != NPUC_STATUS_OK) break;
    data = (float*)malloc(info.elements * sizeof(float) + 1);
    if (!data) {
      s = NPUC_STATUS_OUT_OF_MEMORY;
      break;
    }
    for (k = 0; k < info.elements; ++k) data[k] = fill;
    s = npuc_runtime_set_input(rt, info.name, NPUC_DTYPE_FLOAT32, data, info.elements * sizeof(float));
    free(data);
  }
  if (s == NPUC_STATUS_OK) s = npuc_runtime_run(rt, NULL, NULL);
  if (s == NPUC_STATUS_OK) {
    npuc_tensor_info out;
    s = npuc_runtime_output_info(rt, 0, &out);
    if (s == NPUC_STATUS_OK) {
      float* y = (float*)malloc(out.elements * sizeof(float) + 1);
      if (!y) {
        s = NPUC_STATUS_OUT_OF_MEMORY;
      } else {
        s = npuc_runtime_get_output(rt, out.name, 1, y, out.elements * sizeof(float), &written);
        if (s == NPUC_STATUS_OK) *first = y[0];
        free(y);
      }
    }
  }
  npuc_runtime_close(rt);
  return s;
}

/* A dynamic AIPP block set field by field from C (capi_test.cpp compares it with the raw bytes): one 32x32
 * RGB888_U8 image, dtcPixelVarReciChn0..2 = 1/255. Returns the first failing status. */
npuc_status c_aipp_block(unsigned char* dst, size_t capacity, size_t* written) {
  npuc_aipp_params* p = NULL;
  npuc_status s = npuc_aipp_params_create(1, &p);
  int c;
  static const char* const var[3] = {"dtcPixelVarReciChn0", "dtcPixelVarReciChn1", "dtcPixelVarReciChn2"};
  if (s != NPUC_STATUS_OK) return s;
  s = npuc_aipp_params_set(p, "inputFormat", 0, 3);
  if (s == NPUC_STATUS_OK) s = npuc_aipp_params_set(p, "srcImageSizeW", 0, 32);
  if (s == NPUC_STATUS_OK) s = npuc_aipp_params_set(p, "srcImageSizeH", 0, 32);
  for (c = 0; c < 3 && s == NPUC_STATUS_OK; ++c) s = npuc_aipp_params_set(p, var[c], 0, 1.0 / 255);
  if (s == NPUC_STATUS_OK) s = npuc_aipp_params_set(p, "dtcPixelVarReciChn3", 0, 0);
  if (s == NPUC_STATUS_OK) s = npuc_aipp_params_encode(p, dst, capacity, written);
  npuc_aipp_params_destroy(p);
  return s;
}
