/* cpu_image.c: the CPU backend's image operations for convolution and
 * pooling layers, cpu_image_kernels.inc instantiated for float and double
 * (bf16 uses the float ones: its memory is float32). */
#include <string.h>

#include "backend/cpu/cpu_image.h"

#define REAL float
#define SUFFIX f32
#include "backend/cpu/cpu_image_kernels.inc"
#undef REAL
#undef SUFFIX

#define REAL double
#define SUFFIX f64
#include "backend/cpu/cpu_image_kernels.inc"
#undef REAL
#undef SUFFIX
