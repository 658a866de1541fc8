/* Generated from src/hplsim/hpl/kernels.py (the table of kernels): do not edit. Regenerate with
 *   python -m hplsim.hpl.kernels --write
 * The kernels that the model table can describe; the runtime indexes its counters by the enum. */
#ifndef HPLSIM_KERNELS_H
#define HPLSIM_KERNELS_H

enum hplsim_kernel {
  K_DGEMM,
  K_DTRSM,
  K_DGEMV,
  K_DGER,
  K_DTRSV,
  K_DAXPY,
  K_DSCAL,
  K_DSWAP,
  K_IDAMAX,
  K_DLACPY,
  K_DLATCPY,
  K_DLASWP00N,
  K_DLASWP10N,
  K_DLASWP01N,
  K_DLASWP01T,
  K_DLASWP02N,
  K_DLASWP03N,
  K_DLASWP03T,
  K_DLASWP04N,
  K_DLASWP04T,
  K_DLASWP05N,
  K_DLASWP05T,
  K_DLASWP06N,
  K_DLASWP06T,
  K_NKERNELS
};

struct hplsim_kernel_info {
  const char *name; /* in the model file */
  /* what the sizes of hplsim_kernel(kernel, x0, x1, x2) hold: the model's variables, then the
   * extra condition variables (NULL: unused) */
  const char *slots[3];
  int calibrated; /* 1 if the calibration benchmark (csrc/calib/calib_blas.c) measures it */
};

static const struct hplsim_kernel_info hplsim_kernels[K_NKERNELS] = {
  [K_DGEMM] = {"dgemm", {"m", "n", "k"}, 1},
  [K_DTRSM] = {"dtrsm", {"m", "n", "k"}, 1},
  [K_DGEMV] = {"dgemv", {"m", "n"}, 0},
  [K_DGER] = {"dger", {"m", "n"}, 0},
  [K_DTRSV] = {"dtrsv", {"n"}, 0},
  [K_DAXPY] = {"daxpy", {"n"}, 0},
  [K_DSCAL] = {"dscal", {"n"}, 0},
  [K_DSWAP] = {"dswap", {"n"}, 0},
  [K_IDAMAX] = {"idamax", {"n"}, 0},
  [K_DLACPY] = {"HPL_dlacpy", {"m", "n"}, 0},
  [K_DLATCPY] = {"HPL_dlatcpy", {"m", "n"}, 0},
  [K_DLASWP00N] = {"HPL_dlaswp00N", {"m", "n", "ld"}, 0},
  [K_DLASWP10N] = {"HPL_dlaswp10N", {"m", "n", "ld"}, 0},
  [K_DLASWP01N] = {"HPL_dlaswp01N", {"m", "n", "ld"}, 0},
  [K_DLASWP01T] = {"HPL_dlaswp01T", {"m", "n", "ld"}, 0},
  [K_DLASWP02N] = {"HPL_dlaswp02N", {"m", "n", "ld"}, 0},
  [K_DLASWP03N] = {"HPL_dlaswp03N", {"m", "n", "ld"}, 0},
  [K_DLASWP03T] = {"HPL_dlaswp03T", {"m", "n", "ld"}, 0},
  [K_DLASWP04N] = {"HPL_dlaswp04N", {"m0", "m1", "n"}, 0},
  [K_DLASWP04T] = {"HPL_dlaswp04T", {"m0", "m1", "n"}, 0},
  [K_DLASWP05N] = {"HPL_dlaswp05N", {"m", "n", "ld"}, 0},
  [K_DLASWP05T] = {"HPL_dlaswp05T", {"m", "n", "ld"}, 0},
  [K_DLASWP06N] = {"HPL_dlaswp06N", {"m", "n", "ld"}, 0},
  [K_DLASWP06T] = {"HPL_dlaswp06T", {"m", "n", "ld"}, 0},
};

/* The kernels the real HPL's tracer times, as X(SHAPE, routine, enumerator): the tracer defines
 * one wrapper per kernel from the wrapper of its shape (the form of its C arguments), so that
 * no C file but the call site writes a kernel's name. */
#define HPLSIM_TRACED_KERNELS(X) \
  X(GEMM, cblas_dgemm, K_DGEMM) \
  X(TRSM, cblas_dtrsm, K_DTRSM) \
  X(GEMV, cblas_dgemv, K_DGEMV) \
  X(GER, cblas_dger, K_DGER) \
  X(TRSV, cblas_dtrsv, K_DTRSV) \
  X(AXPY, cblas_daxpy, K_DAXPY) \
  X(SCAL, cblas_dscal, K_DSCAL) \
  X(SWAP, cblas_dswap, K_DSWAP) \
  X(IAMAX, cblas_idamax, K_IDAMAX) \
  X(CPY, HPL_dlacpy, K_DLACPY) \
  X(CPY, HPL_dlatcpy, K_DLATCPY) \
  X(SWP_A, HPL_dlaswp00N, K_DLASWP00N) \
  X(SWP_A, HPL_dlaswp10N, K_DLASWP10N) \
  X(SWP_AU, HPL_dlaswp01N, K_DLASWP01N) \
  X(SWP_AU, HPL_dlaswp01T, K_DLASWP01T) \
  X(SWP_02, HPL_dlaswp02N, K_DLASWP02N) \
  X(SWP_03, HPL_dlaswp03N, K_DLASWP03N) \
  X(SWP_03, HPL_dlaswp03T, K_DLASWP03T) \
  X(SWP_04, HPL_dlaswp04N, K_DLASWP04N) \
  X(SWP_04, HPL_dlaswp04T, K_DLASWP04T) \
  X(SWP_AU, HPL_dlaswp05N, K_DLASWP05N) \
  X(SWP_AU, HPL_dlaswp05T, K_DLASWP05T) \
  X(SWP_06, HPL_dlaswp06N, K_DLASWP06N) \
  X(SWP_06, HPL_dlaswp06T, K_DLASWP06T) \
  /* end */

#endif
