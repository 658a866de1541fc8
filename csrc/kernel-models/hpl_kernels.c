/* HPL's own copy and row-swap kernels, as time models. The build leaves HPL's versions
 * of these functions out of the emulated binary (see hplsim/hpl/build.py). Each keeps
 * the quick return of HPL's code: nothing to copy, no time spent. */
#include "hpl.h"
#include "runtime.h"

void HPL_dlacpy(const int M, const int N, const double *A, const int LDA, double *B, const int LDB)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLACPY, M, N, 0);
}

void HPL_dlatcpy(const int M, const int N, const double *A, const int LDA, double *B, const int LDB)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLATCPY, M, N, 0);
}

void HPL_dlaswp00N(const int M, const int N, double *A, const int LDA, const int *IPIV)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP00N, M, N, LDA);
}

void HPL_dlaswp10N(const int M, const int N, double *A, const int LDA, const int *IPIV)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP10N, M, N, LDA);
}

void HPL_dlaswp01N(const int M, const int N, double *A, const int LDA, double *U, const int LDU,
                   const int *LINDXA, const int *LINDXAU)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP01N, M, N, LDA);
}

void HPL_dlaswp01T(const int M, const int N, double *A, const int LDA, double *U, const int LDU,
                   const int *LINDXA, const int *LINDXAU)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP01T, M, N, LDA);
}

void HPL_dlaswp02N(const int M, const int N, const double *A, const int LDA, double *W0, double *W,
                   const int LDW, const int *LINDXA, const int *LINDXAU)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP02N, M, N, LDA);
}

void HPL_dlaswp03N(const int M, const int N, double *U, const int LDU, const double *W0, const double *W,
                   const int LDW)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP03N, M, N, LDU);
}

void HPL_dlaswp03T(const int M, const int N, double *U, const int LDU, const double *W0, const double *W,
                   const int LDW)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP03T, M, N, LDU);
}

void HPL_dlaswp04N(const int M0, const int M1, const int N, double *U, const int LDU, double *A,
                   const int LDA, const double *W0, const double *W, const int LDW, const int *LINDXA,
                   const int *LINDXAU)
{
  if ((M0 <= 0 && M1 <= 0) || N <= 0)
    return;
  hplsim_kernel(K_DLASWP04N, M0, M1, N);
}

void HPL_dlaswp04T(const int M0, const int M1, const int N, double *U, const int LDU, double *A,
                   const int LDA, const double *W0, const double *W, const int LDW, const int *LINDXA,
                   const int *LINDXAU)
{
  if ((M0 <= 0 && M1 <= 0) || N <= 0)
    return;
  hplsim_kernel(K_DLASWP04T, M0, M1, N);
}

void HPL_dlaswp05N(const int M, const int N, double *A, const int LDA, const double *U, const int LDU,
                   const int *LINDXA, const int *LINDXAU)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP05N, M, N, LDA);
}

void HPL_dlaswp05T(const int M, const int N, double *A, const int LDA, const double *U, const int LDU,
                   const int *LINDXA, const int *LINDXAU)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP05T, M, N, LDA);
}

void HPL_dlaswp06N(const int M, const int N, double *A, const int LDA, double *U, const int LDU,
                   const int *LINDXA)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP06N, M, N, LDA);
}

void HPL_dlaswp06T(const int M, const int N, double *A, const int LDA, double *U, const int LDU,
                   const int *LINDXA)
{
  if (M <= 0 || N <= 0)
    return;
  hplsim_kernel(K_DLASWP06T, M, N, LDA);
}
