/* The matrix, one lazily mapped memory file for all ranks (matrix.c). */
#ifndef HPLSIM_MATRIX_H
#define HPLSIM_MATRIX_H

#include <stddef.h>

/* The matrix: one lazily mapped memory file shared by all ranks, one mapping per rank,
 * never read for its values. */
void *hplsim_matrix(size_t size);
void hplsim_matrix_free(void *ptr);
/* Where the panel factorisation's row swaps write instead of the matrix (HPL_dlocswp*):
 * one column, the first of the rank's matrix, used with a leading dimension of 0. */
double *hplsim_row_sink(void);
/* Whether `p` lies in one of this rank's matrices. */
int hplsim_in_matrix(const void *p);

/* Maps `len` bytes at `addr` (page-aligned, inside a buffer that SMPI's shared malloc
 * folded) to one lazily mapped file shared by all ranks, in place of SMPI's one mapping
 * per block; SMPI's record of the buffer (which bytes it never copies) is unchanged. */
void hplsim_fold_lazily(void *addr, size_t len);

/* `size` bytes of the memory file `name`, shared by all ranks (its descriptor is found
 * through the environment variable `env_name` and kept in `*cached_fd`, -1 at first), from
 * offset 0: what one rank writes there, every rank reads. */
void *hplsim_map_shared(const char *name, const char *env_name, int *cached_fd, size_t size);

#endif
