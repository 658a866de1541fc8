/* The kernels that the model table can describe. The order is irrelevant outside the
 * runtime; their names in the model file are model.c's. */
#ifndef HPLSIM_KERNELS_H
#define HPLSIM_KERNELS_H

enum hplsim_kernel {
  K_DGEMM, K_DTRSM, K_DGEMV, K_DGER, K_DTRSV, K_DAXPY, K_DSCAL, K_DSWAP, K_IDAMAX,
  K_DLACPY, K_DLATCPY,
  K_DLASWP00N, K_DLASWP10N, K_DLASWP01N, K_DLASWP01T, K_DLASWP02N, K_DLASWP03N,
  K_DLASWP03T, K_DLASWP04N, K_DLASWP04T, K_DLASWP05N, K_DLASWP05T, K_DLASWP06N,
  K_DLASWP06T,
  K_NKERNELS
};

#endif
