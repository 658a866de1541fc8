/* The BLAS that HPL calls (HPL_CALL_CBLAS), as time models. Nothing is computed, except
 * dcopy: HPL_pdmxswp moves the (max, index, owner) pivot record with it (outside the matrix).
 *
 * Each function first takes the BLAS's own quick return (an empty operand: nothing to do,
 * no time spent), as the reference BLAS and OpenBLAS do: HPL calls kernels with a zero
 * size routinely (e.g. the last, empty chunk of an update while it polls for a panel),
 * and a polynomial model evaluated there would charge its intercept and cross terms. */
#include "hpl.h"
#include "blas.h"
#include "fatal.h"
#include "matrix.h"
#include "runtime.h"

void cblas_dgemm(const enum HPL_ORDER order, const enum HPL_TRANS ta, const enum HPL_TRANS tb, const int M,
                 const int N, const int K, const double alpha, const double *A, const int lda, const double *B,
                 const int ldb, const double beta, double *C, const int ldc)
{
  if (M <= 0 || N <= 0 || ((K <= 0 || alpha == 0.0) && beta == 1.0))
    return;
  hplsim_kernel(K_DGEMM, M, N, K);
}

void cblas_dtrsm(const enum HPL_ORDER order, const enum HPL_SIDE side, const enum HPL_UPLO uplo,
                 const enum HPL_TRANS ta, const enum HPL_DIAG diag, const int M, const int N, const double alpha,
                 const double *A, const int lda, double *B, const int ldb)
{
  if (M <= 0 || N <= 0)
    return;
  /* k: order of the triangular matrix, so that the model's mnk term is M²N or MN². */
  hplsim_kernel(K_DTRSM, M, N, side == HplLeft ? M : N);
}

void cblas_dgemv(const enum HPL_ORDER order, const enum HPL_TRANS ta, const int M, const int N,
                 const double alpha, const double *A, const int lda, const double *X, const int incx,
                 const double beta, double *Y, const int incy)
{
  if (M <= 0 || N <= 0 || (alpha == 0.0 && beta == 1.0))
    return;
  hplsim_kernel(K_DGEMV, M, N, 0);
}

void cblas_dger(const enum HPL_ORDER order, const int M, const int N, const double alpha, const double *X,
                const int incx, const double *Y, const int incy, double *A, const int lda)
{
  if (M <= 0 || N <= 0 || alpha == 0.0)
    return;
  hplsim_kernel(K_DGER, M, N, 0);
}

void cblas_dtrsv(const enum HPL_ORDER order, const enum HPL_UPLO uplo, const enum HPL_TRANS ta,
                 const enum HPL_DIAG diag, const int N, const double *A, const int lda, double *X, const int incx)
{
  if (N <= 0)
    return;
  hplsim_kernel(K_DTRSV, N, 0, 0);
}

void cblas_daxpy(const int N, const double alpha, const double *X, const int incx, double *Y, const int incy)
{
  if (N <= 0)
    return;
  hplsim_kernel(K_DAXPY, N, 0, 0);
}

void cblas_dscal(const int N, const double alpha, double *X, const int incx)
{
  if (N <= 0)
    return;
  hplsim_kernel(K_DSCAL, N, 0, 0);
}

void cblas_dswap(const int N, double *X, const int incx, double *Y, const int incy)
{
  if (N <= 0)
    return;
  hplsim_kernel(K_DSWAP, N, 0, 0);
}

/* The magnitude idamax drew for the entry it returned, and where that entry is. */
static const double *pivot_at;
static double pivot_value;

int cblas_idamax(const int N, const double *X, const int incx)
{
  if (N <= 0)
    return 0;
  hplsim_kernel(K_IDAMAX, N, 0, 0);
  /* HPL_dlocmax takes the entry as the local maximum, and HPL_pdmxswp gives the pivot to
   * the process row whose maximum is largest (ties: the lowest row). The folded matrix
   * holds no values, so every process would tie and the pivot would always come from the
   * same row. Give the local maximum the law of the largest of N uniforms instead: the
   * global pivot is then uniform over the remaining rows, as with HPL's random matrix.
   * The patched HPL_dlocmax reads it back with hplsim_pivot_value, right away. */
  int i = hplsim_random_index(N);
  pivot_at = X + (size_t)i * (size_t)incx;
  pivot_value = hplsim_pivot_magnitude(N);
  return i;
}

double hplsim_pivot_value(const double *entry)
{
  if (entry != pivot_at)
    hplsim_fatal("HPL_dlocmax asked for an entry that idamax did not return");
  return pivot_value;
}

void cblas_dcopy(const int N, const double *X, const int incx, double *Y, const int incy)
{
  /* The matrix holds no values (nothing reads them back); copying rows in or out of it
   * would only touch, and so map, its pages. */
  if (hplsim_in_matrix(X) || hplsim_in_matrix(Y))
    return;
  for (int i = 0; i < N; i++)
    Y[i * incy] = X[i * incx];
}
