/* A C program using ahead-of-time kernels (scale.h, written at build time by aot_generator
 * through tritium_add_aot_kernels): it links libcuda alone, not libtritium. It checks a refusal
 * that needs no driver (a pointer marked ':16' that is not 16-byte aligned), so it runs
 * anywhere libcuda.so.1 (or the toolkit's stub under that name) loads. */
#include "scale.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  CUresult r = scale_aligned(0, 4, (CUdeviceptr)0x1004, (CUdeviceptr)0x2000, 64, 2.0f);
  if (r != CUDA_ERROR_INVALID_VALUE || !strstr(scale_last_error(), "'out'")) {
    printf("FAILED: a misaligned pointer was not refused: %d %s\n", (int)r, scale_last_error());
    return 1;
  }
  printf("ok: %s\n", scale_last_error());
  return 0;
}
