/* The BLAS that HPL calls, as time models (blas.c): what HPL's patched code reads back. */
#ifndef HPLSIM_BLAS_H
#define HPLSIM_BLAS_H

/* The local maximum that idamax drew for the entry it returned (HPL_dlocmax). */
double hplsim_pivot_value(const double *entry);

#endif
