/* Unit test of the BLAS quick returns: calls each modelled kernel with empty and non-empty
 * operands and prints which calls reached the model. Linked with blas.c and hpl_kernels.c
 * and a recording stub instead of the runtime. Also: dcopy copies, except rows in or out
 * of the matrix (here, the array `matrix`), and idamax's maximum is read back. */
#include <stdio.h>
#include <stdlib.h>

#include "hpl.h"
#include "hplsim_runtime.h"

static int reached;

void hplsim_kernel(enum hplsim_kernel kernel, double x0, double x1, double x2) { reached++; }
int hplsim_random_index(int n) { return n - 1; }
double hplsim_pivot_magnitude(int n) { return 0.5; }
static double matrix[4];
int hplsim_in_matrix(const void *p) { return (const double *)p >= matrix && (const double *)p < matrix + 4; }
void hplsim_fatal(const char *fmt, ...) { puts("fatal"); exit(1); }

#define CHECK(name, call)            \
  do {                               \
    reached = 0;                     \
    call;                            \
    printf("%s %d\n", name, reached); \
  } while (0)

int main(void)
{
  double a[16] = {0}, b[16] = {0}, c[16] = {0};
  int ip[4] = {0};
  CHECK("dgemm_m0", cblas_dgemm(HplColumnMajor, HplNoTrans, HplNoTrans, 0, 2, 2, -1.0, a, 2, b, 2, 1.0, c, 2));
  CHECK("dgemm_n0", cblas_dgemm(HplColumnMajor, HplNoTrans, HplNoTrans, 2, 0, 2, -1.0, a, 2, b, 2, 1.0, c, 2));
  CHECK("dgemm_k0", cblas_dgemm(HplColumnMajor, HplNoTrans, HplNoTrans, 2, 2, 0, -1.0, a, 2, b, 2, 1.0, c, 2));
  CHECK("dgemm_222", cblas_dgemm(HplColumnMajor, HplNoTrans, HplNoTrans, 2, 2, 2, -1.0, a, 2, b, 2, 1.0, c, 2));
  CHECK("dtrsm_m0", cblas_dtrsm(HplColumnMajor, HplLeft, HplLower, HplNoTrans, HplUnit, 0, 2, 1.0, a, 2, b, 2));
  CHECK("dtrsm_22", cblas_dtrsm(HplColumnMajor, HplLeft, HplLower, HplNoTrans, HplUnit, 2, 2, 1.0, a, 2, b, 2));
  CHECK("dgemv_n0", cblas_dgemv(HplColumnMajor, HplNoTrans, 2, 0, -1.0, a, 2, b, 1, 1.0, c, 1));
  CHECK("dgemv_22", cblas_dgemv(HplColumnMajor, HplNoTrans, 2, 2, -1.0, a, 2, b, 1, 1.0, c, 1));
  CHECK("dger_m0", cblas_dger(HplColumnMajor, 0, 2, -1.0, a, 1, b, 1, c, 2));
  CHECK("dscal_0", cblas_dscal(0, 2.0, a, 1));
  CHECK("dscal_3", cblas_dscal(3, 2.0, a, 1));
  CHECK("idamax_0", cblas_idamax(0, a, 1));
  CHECK("dlacpy_0", HPL_dlacpy(0, 2, a, 2, b, 2));
  CHECK("dlacpy_22", HPL_dlacpy(2, 2, a, 2, b, 2));
  CHECK("dlaswp00N_n0", HPL_dlaswp00N(2, 0, a, 2, ip));
  CHECK("dlaswp04T_m00", HPL_dlaswp04T(0, 0, 2, a, 2, b, 2, c, c, 2, ip, ip));
  CHECK("dlaswp04T_m01", HPL_dlaswp04T(0, 1, 2, a, 2, b, 2, c, c, 2, ip, ip));
  a[0] = 1.0; a[1] = 5.0;
  cblas_dcopy(2, a, 1, b, 1);
  printf("dcopy %g %g\n", b[0], b[1]);
  cblas_dcopy(2, a, 1, matrix, 1);
  cblas_dcopy(2, matrix, 1, c, 1);
  printf("dcopy_matrix %g %g %g\n", matrix[0], matrix[1], c[0]);
  int i = cblas_idamax(3, a, 1);
  printf("idamax_value %d %g\n", i, hplsim_pivot_value(a + i));
  return 0;
}
