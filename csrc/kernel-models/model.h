/* The model table of one rank: loading (for one host and CPU) and drawing durations.
 * No SMPI here, so that a plain test program can sample the same law. */
#ifndef HPLSIM_MODEL_H
#define HPLSIM_MODEL_H

#include <stddef.h>

#include "kernels.h"
#include "rng.h"

/* Load the entries of `host` (or of the `*` fallback) for CPU local_rank % ncpus.
 * Returns 0, or -1 with a one-line reason in `err`. */
int hplsim_model_load(const char *path, const char *host, int local_rank, char *err, size_t errlen);

/* 1 if the table models `kernel` for this rank (a kernel absent costs 0 s). */
int hplsim_model_has(enum hplsim_kernel kernel);

/* One duration in seconds (>= 0) for a call with sizes x0, x1, x2. */
double hplsim_model_draw(enum hplsim_kernel kernel, double x0, double x1, double x2, hplsim_rng *noise);

/* The model file's name of a kernel (hplsim_kernels[kernel].name). */
const char *hplsim_kernel_name(enum hplsim_kernel kernel);

/* The CPU index the rank was mapped to (after hplsim_model_load). */
int hplsim_model_cpu(void);

#endif
