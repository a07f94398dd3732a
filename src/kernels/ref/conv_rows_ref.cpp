#define CONV_ROWS_NAME conv_rows_ref
#include "kernels/ref/conv_rows.inc"
