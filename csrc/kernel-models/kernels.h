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

/* The model file's name of each kernel. */
static const char *const hplsim_kernel_names[K_NKERNELS] = {
  [K_DGEMM] = "dgemm",
  [K_DTRSM] = "dtrsm",
  [K_DGEMV] = "dgemv",
  [K_DGER] = "dger",
  [K_DTRSV] = "dtrsv",
  [K_DAXPY] = "daxpy",
  [K_DSCAL] = "dscal",
  [K_DSWAP] = "dswap",
  [K_IDAMAX] = "idamax",
  [K_DLACPY] = "HPL_dlacpy",
  [K_DLATCPY] = "HPL_dlatcpy",
  [K_DLASWP00N] = "HPL_dlaswp00N",
  [K_DLASWP10N] = "HPL_dlaswp10N",
  [K_DLASWP01N] = "HPL_dlaswp01N",
  [K_DLASWP01T] = "HPL_dlaswp01T",
  [K_DLASWP02N] = "HPL_dlaswp02N",
  [K_DLASWP03N] = "HPL_dlaswp03N",
  [K_DLASWP03T] = "HPL_dlaswp03T",
  [K_DLASWP04N] = "HPL_dlaswp04N",
  [K_DLASWP04T] = "HPL_dlaswp04T",
  [K_DLASWP05N] = "HPL_dlaswp05N",
  [K_DLASWP05T] = "HPL_dlaswp05T",
  [K_DLASWP06N] = "HPL_dlaswp06N",
  [K_DLASWP06T] = "HPL_dlaswp06T",
};

/* What the 3 sizes of hplsim_kernel(kernel, x0, x1, x2) hold: the model's variables, then
 * the extra condition variables (NULL: unused). */
static const char *const hplsim_kernel_slots[K_NKERNELS][3] = {
  [K_DGEMM] = {"m", "n", "k"},
  [K_DTRSM] = {"m", "n", "k"},
  [K_DGEMV] = {"m", "n"},
  [K_DGER] = {"m", "n"},
  [K_DTRSV] = {"n"},
  [K_DAXPY] = {"n"},
  [K_DSCAL] = {"n"},
  [K_DSWAP] = {"n"},
  [K_IDAMAX] = {"n"},
  [K_DLACPY] = {"m", "n"},
  [K_DLATCPY] = {"m", "n"},
  [K_DLASWP00N] = {"m", "n", "ld"},
  [K_DLASWP10N] = {"m", "n", "ld"},
  [K_DLASWP01N] = {"m", "n", "ld"},
  [K_DLASWP01T] = {"m", "n", "ld"},
  [K_DLASWP02N] = {"m", "n", "ld"},
  [K_DLASWP03N] = {"m", "n", "ld"},
  [K_DLASWP03T] = {"m", "n", "ld"},
  [K_DLASWP04N] = {"m0", "m1", "n"},
  [K_DLASWP04T] = {"m0", "m1", "n"},
  [K_DLASWP05N] = {"m", "n", "ld"},
  [K_DLASWP05T] = {"m", "n", "ld"},
  [K_DLASWP06N] = {"m", "n", "ld"},
  [K_DLASWP06T] = {"m", "n", "ld"},
};

/* 1 if the calibration benchmark (csrc/calib/calib_blas.c) measures the kernel. */
static const int hplsim_kernel_calibrated[K_NKERNELS] = {
  [K_DGEMM] = 1,
  [K_DTRSM] = 1,
  [K_DGEMV] = 0,
  [K_DGER] = 0,
  [K_DTRSV] = 0,
  [K_DAXPY] = 0,
  [K_DSCAL] = 0,
  [K_DSWAP] = 0,
  [K_IDAMAX] = 0,
  [K_DLACPY] = 0,
  [K_DLATCPY] = 0,
  [K_DLASWP00N] = 0,
  [K_DLASWP10N] = 0,
  [K_DLASWP01N] = 0,
  [K_DLASWP01T] = 0,
  [K_DLASWP02N] = 0,
  [K_DLASWP03N] = 0,
  [K_DLASWP03T] = 0,
  [K_DLASWP04N] = 0,
  [K_DLASWP04T] = 0,
  [K_DLASWP05N] = 0,
  [K_DLASWP05T] = 0,
  [K_DLASWP06N] = 0,
  [K_DLASWP06T] = 0,
};

#endif
