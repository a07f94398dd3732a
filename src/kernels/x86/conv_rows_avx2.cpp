// conv_rows.inc compiled with hardware FMA (-mavx2 -mfma): std::fma becomes one instruction, same bits.
#define CONV_ROWS_NAME conv_rows_fma
#include "kernels/ref/conv_rows.inc"
