/* A C program against the kernel library's C interface (tritium::kernels_c, installed as
   libtritium_kernels_c.so): a null output or input is refused with a message, before anything
   runs. */
#include <tritium/kernels/capi/tritium_kernels.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  float b = 0;
  int rc = tritium_vector_add(0, NULL, &b, &b, 1, NULL);
  const char *error = tritium_last_error();
  int ok = rc != 0 && strstr(error, "vectorAdd: out is null") != NULL;
  printf("%s: tritium_vector_add with a null output returns %d: %s\n", ok ? "ok" : "FAILED", rc,
         error);
  rc = tritium_matmul(2, 2, &b, &b, NULL, NULL, 8, 8, 8, 0, 0, 0, 0, 0, NULL);
  error = tritium_last_error();
  int matmulOk = rc != 0 && strstr(error, "matmul: b is null") != NULL;
  printf("%s: tritium_matmul without b returns %d: %s\n", matmulOk ? "ok" : "FAILED", rc, error);
  return ok && matmulOk ? 0 : 1;
}
