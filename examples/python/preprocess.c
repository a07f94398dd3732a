/* The example's pre-processing in C, called from Python through ctypes (the Kneron guide's "Setting up C
 * preprocess/postprocess"): an 8-bit gray picture's window, cut at (x, y), size 8 x 8, to the model input
 * [1, 1, 8, 8] float32 in [0, 1] (value / 255, rounded to float once). Build:
 *   cc -O2 -shared -fPIC -o libpreprocess.so preprocess.c */
#include <stdint.h>

int preprocess_window(const uint8_t* gray, int height, int width, int x, int y, float* out) {
  if (!gray || !out || x < 0 || y < 0 || x + 8 > width || y + 8 > height) return -1;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) out[r * 8 + c] = (float)gray[(y + r) * width + (x + c)] / 255.0f;
  return 0;
}

/* The YOLO example's (kneron_yolo.py): a whole 8-bit gray picture of n pixels to float32 in [0, 1] (value / 255). */
int preprocess_image(const uint8_t* gray, int n, float* out) {
  if (!gray || !out || n < 0) return -1;
  for (int i = 0; i < n; ++i) out[i] = (float)gray[i] / 255.0f;
  return 0;
}
